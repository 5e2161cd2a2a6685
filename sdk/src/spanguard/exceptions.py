"""Every error spanguard raises on purpose.

::

    SpanguardError                      base of everything below
    ├── ConfigError(…, ValueError)      a bad argument to configure() or a bad setting
    └── InputError(…, ValueError)       bad user input; carries file, line and field
        ├── TraceFormatError            a malformed span file, agent trace or trace log line
        ├── SuiteError                  a malformed fairness suite
        └── CaseFormatError             a malformed regression case, outputs or metrics file

The CLI turns an :class:`InputError` or :class:`ConfigError` into a one-line message and exit
code 2. Messages are full sentences that say what is wrong and what to do about it.
"""

from __future__ import annotations

__all__ = [
    "CaseFormatError",
    "ConfigError",
    "InputError",
    "SpanguardError",
    "SuiteError",
    "TraceFormatError",
]


class SpanguardError(Exception):
    """Base class of every error spanguard raises on purpose."""


class ConfigError(SpanguardError, ValueError):
    """A bad configuration value; the message names the parameter."""

    def __init__(self, parameter: str, message: str) -> None:
        self.parameter = parameter
        self.detail = message
        super().__init__(f"{parameter}: {message}")


class InputError(SpanguardError, ValueError):
    """Bad user input, located by file, line (1-based) and field (a dotted path)."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.file = file
        self.line = line
        self.field = field
        self.detail = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file if self.line is None else f"{self.file}:{self.line}"
        elif self.line is not None:
            where = f"line {self.line}"
        field = f"field '{self.field}': " if self.field else ""
        return f"{where}: {field}{self.detail}" if where else f"{field}{self.detail}"

    def located(self, *, file: str | None = None, line: int | None = None) -> InputError:
        """A copy of this error with the file and line filled in where they were unknown."""
        return type(self)(
            self.detail,
            file=self.file if self.file is not None else file,
            line=self.line if self.line is not None else line,
            field=self.field,
        )


class TraceFormatError(InputError):
    """A malformed span file, assembled agent trace or trace log line."""


class SuiteError(InputError):
    """A malformed fairness suite."""


class CaseFormatError(InputError):
    """A malformed regression case, outputs or metrics file."""
