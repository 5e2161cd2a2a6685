"""What ``GET /health`` says: the state of each part of the processor, watched.

The parts (:data:`PARTS`):

* ``http`` — the OTLP/HTTP receiver (it answers ``/health``, so it is ``ok`` when anyone hears);
* ``grpc`` — the OTLP/gRPC receiver: ``down`` once its server stopped, ``wedged`` when its
  event loop has not run a callback the watchdog posts for :data:`WEDGED_AFTER` seconds;
* ``writer`` — the thread that commits spans and assembles traces: ``down`` once it ended,
  ``wedged`` when it has not come round its loop for :data:`WEDGED_AFTER` seconds (a commit
  that long is stuck, not slow: the loop comes round at least every 0.25 s);
* ``store`` — ``checking`` while the checks that read the whole store run at start (on a
  thread of their own: ``serve`` answers and acknowledges requests meanwhile), ``failed``
  after an error the
  writer cannot carry on from (requests are refused and ``serve`` stops), ``refusing writes``
  while SQLite refuses commits it retries (a full disk, a lock).

Each is ``ok``, ``disabled`` (a receiver not started) or a sentence starting with ``starting``,
``checking``, ``down``, ``wedged``, ``failed`` or ``refusing writes``. ``/health`` answers 200
when every part is ``ok``, ``disabled``, ``starting`` or ``checking``, else 503 with ``down``
naming the parts that are not. :class:`Watchdog` is the
thread that posts the gRPC probe; ``serve`` stops (exit 3) when a part is ``down`` or ``failed``
(collector/server.py), and reports ``wedged`` parts here so a supervisor probing ``/health``
restarts it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CHECKING", "DISABLED", "OK", "PARTS", "WEDGED_AFTER", "Health", "Watchdog"]

PARTS = ("http", "grpc", "writer", "store")
OK = "ok"
DISABLED = "disabled"
STARTING = "starting"
CHECKING = "checking"
WEDGED_AFTER = 10.0  # seconds without a sign of life before a part is called wedged
_INTERVAL = 0.5


@dataclass(frozen=True, slots=True)
class Health:
    """The state of each part, in :data:`PARTS` order."""

    parts: tuple[tuple[str, str], ...]

    @property
    def down(self) -> tuple[str, ...]:
        """The parts that are neither ``ok``, ``disabled``, ``starting`` nor ``checking``."""
        return tuple(
            name
            for name, state in self.parts
            if state not in (OK, DISABLED) and not state.startswith((STARTING, CHECKING))
        )

    @property
    def ok(self) -> bool:
        return not self.down

    def failed(self) -> str | None:
        """A part that stopped for good (``down`` or ``failed``), described, or None."""
        for name, state in self.parts:
            if state.startswith(("down", "failed")):
                return f"{name} {state}"  # e.g. "writer down: the span writer stopped"
        return None


class Watchdog:
    """A thread posting ``probe`` every half second (``probe`` must not block: it asks a
    loop to note that it ran); :meth:`stop` ends it."""

    def __init__(self, probe: Callable[[], None], interval: float = _INTERVAL) -> None:
        self._probe = probe
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="spanguard-watch", daemon=True)

    def start(self) -> Watchdog:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._probe()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(5)
