"""A progress bar on stderr that appears only when work takes longer than a moment."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # typing.Self needs Python 3.11; mypy ships typing_extensions
    from typing_extensions import Self

__all__ = ["Progress"]


class Progress:
    """Report ``done/total``, the rate and an ETA on a terminal once ``delay_s`` seconds pass.

    Parameters
    ----------
    total
        Units of work expected.
    label
        What is being counted.
    delay_s
        Stay silent for work that ends sooner, seconds.
    stream
        Where to draw (stderr by default; nothing is drawn unless it is a terminal).
    done
        Units already done before this run (a resumed job); the rate counts only new ones.
    unit
        Name of a unit in the rate (``"scenarios"`` shows ``N scenarios/s``).
    """

    def __init__(
        self,
        total: int,
        label: str,
        delay_s: float = 0.5,
        stream: TextIO | None = None,
        done: int = 0,
        unit: str = "",
    ) -> None:
        self.total = total
        self.label = label
        self.delay_s = delay_s
        self.stream = stream if stream is not None else sys.stderr
        self.done = done
        self._done_before = done
        self.unit = f" {unit}" if unit else ""
        self._start = time.monotonic()
        self._drawn = False

    def advance(self, units: int, note: str = "") -> None:
        """Count ``units`` more done and redraw if the bar is due; ``note`` is shown after it."""
        self.done += units
        elapsed = time.monotonic() - self._start
        if elapsed < self.delay_s or not self.stream.isatty():
            return
        width = 30
        filled = width * self.done // max(self.total, 1)
        bar = "#" * filled + "-" * (width - filled)
        rate = (self.done - self._done_before) / elapsed
        eta = f"{(self.total - self.done) / rate:.0f} s" if rate > 0 else "?"
        note = f" {note}" if note else ""
        self.stream.write(
            f"\r{self.label} [{bar}] {self.done}/{self.total}{note}, {rate:.0f}{self.unit}/s, ETA {eta} "
        )
        self.stream.flush()
        self._drawn = True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
