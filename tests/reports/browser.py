"""A small headless-Chromium driver over the DevTools protocol, for checking HTML reports.

Chromium runs with a fresh profile, no sandbox (CI runs as root), no network services, and
``--remote-debugging-port=0``; the port is read from ``DevToolsActivePort`` in the profile and
the page target is driven over one websocket (``websockets``' sync client)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from websockets.sync.client import ClientConnection, connect

INSTALL_HINT = (
    "Chromium is needed for the browser checks of the HTML reports; install it with "
    "`apt-get update && apt-get install -y chromium` (Debian/Ubuntu) so that "
    "`chromium` is on PATH."
)

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-port=0",
)


def find_chromium() -> str | None:
    """``chromium`` on PATH, or Debian's ``/usr/bin/chromium``; None when it is not installed.

    The test suite installs nothing on the machine: ``.ci/run`` installs Chromium for CI."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None


@dataclass
class PageLoad:
    """What happened while one URL loaded: console errors, exceptions, requested URLs."""

    url: str
    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


class Browser:
    """``with Browser() as b: load = b.open(url); b.evaluate("...")``."""

    def __init__(self, width: int = 1200, height: int = 900, timeout: float = 20.0) -> None:
        binary = find_chromium()
        if binary is None:
            raise RuntimeError(INSTALL_HINT)
        self.binary, self.width, self.height, self.timeout = binary, width, height, timeout
        self._profile = tempfile.TemporaryDirectory(
            prefix="spanguard-chromium-", ignore_cleanup_errors=True
        )
        self._proc: subprocess.Popen[bytes] | None = None
        self._ws: ClientConnection | None = None
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> Browser:
        profile = Path(self._profile.name)
        self._proc = subprocess.Popen(
            [
                self.binary,
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={self.width},{self.height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while not (port_file.exists() and port_file.read_text().strip()):
            if self._proc.poll() is not None:
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                raise RuntimeError(
                    f"Chromium exited with code {self._proc.returncode} before "
                    f"opening its DevTools port: {err[-2000:]}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"Chromium did not open its DevTools port in {self.timeout}s.")
            time.sleep(0.05)
        port = int(port_file.read_text().splitlines()[0])
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/json/list", timeout=self.timeout
        ) as response:
            targets = json.loads(response.read())
        page = next(t for t in targets if t.get("type") == "page")
        self._ws = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=self.timeout)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
        )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._ws is not None:
            self._ws.close()
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
            if self._proc.stderr:
                self._proc.stderr.close()
        _remove_profile(Path(self._profile.name))
        self._profile.cleanup()

    def _receive(self) -> dict[str, Any]:
        assert self._ws is not None
        message: dict[str, Any] = json.loads(self._ws.recv(timeout=self.timeout))
        return message

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call one DevTools method and return its result; events seen meanwhile are kept."""
        assert self._ws is not None
        self._next_id += 1
        self._ws.send(json.dumps({"id": self._next_id, "method": method, "params": params or {}}))
        while True:
            message = self._receive()
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"DevTools {method} failed: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self._events.append(message)

    def _wait_for(self, method: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not any(e["method"] == method for e in self._events):
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {method} event within {self.timeout}s")
            message = self._receive()
            if "method" in message:
                self._events.append(message)

    def open(self, url: str) -> PageLoad:
        """Navigate to ``url``, wait for its load event, and report what the page logged."""
        self._events.clear()
        result = self.send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise RuntimeError(f"Chromium could not load {url}: {result['errorText']}")
        self._wait_for("Page.loadEventFired")
        self.evaluate("new Promise(r => requestAnimationFrame(() => r(true)))")
        load = PageLoad(url)
        for event in self._events:
            params = event.get("params", {})
            if event["method"] == "Runtime.consoleAPICalled" and params["type"] in (
                "error",
                "assert",
            ):
                load.console_errors.append(
                    " ".join(
                        str(a.get("value", a.get("description"))) for a in params.get("args", [])
                    )
                )
            elif event["method"] == "Log.entryAdded" and params["entry"]["level"] == "error":
                load.console_errors.append(params["entry"].get("text", ""))
            elif event["method"] == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                load.exceptions.append(
                    details.get("exception", {}).get("description") or details.get("text", "")
                )
            elif event["method"] == "Network.requestWillBeSent":
                load.requests.append(params["request"]["url"])
        return load

    def evaluate(self, expression: str) -> Any:
        """The JSON value of ``expression`` in the page (promises are awaited)."""
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluating {expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        """A PNG of the viewport (or the whole page, capped at 3 viewports tall)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            height = min(
                int(self.evaluate("document.documentElement.scrollHeight")), 3 * self.height
            )
            params.update(
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": self.width, "height": height, "scale": 1},
            )
        data = self.send("Page.captureScreenshot", params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path


def _remove_profile(profile: Path, attempts: int = 50) -> None:
    """Remove Chromium's profile folder. Its helper processes (crashpad, a renderer) can
    still write there for a moment after the browser process has exited, so a single rmtree
    can fail with "Directory not empty": retry for up to 5 s."""
    for _ in range(attempts):
        try:
            shutil.rmtree(profile)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)
