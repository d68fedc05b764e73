"""One question's time for its model calls (`LLM_TIMEOUT_S`): every call of a question draws on one clock.

The clock starts at the question's first model call; time spent waiting for the
embedded model's turn (behind another user's answer) is not counted.
"""

from __future__ import annotations

import time


class Deadline:
    """A wall-clock budget of `seconds`, started by the first `begin()`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._started: float | None = None
        self._end: float | None = None

    def begin(self, waited: float = 0.0) -> None:
        """Start the clock, or, when it runs already, add `waited` seconds spent queued for a turn."""
        if self._end is None:
            self._started = time.monotonic()
            self._end = self._started + self.seconds
        else:
            self._end += waited

    @property
    def end(self) -> float:
        """The `time.monotonic()` at which the budget is spent (the clock starts here if it had not)."""
        self.begin()
        assert self._end is not None
        return self._end

    def left(self) -> float:
        """Seconds left, never below zero."""
        return max(self.end - time.monotonic(), 0.0)

    @property
    def elapsed(self) -> float:
        """Seconds since the clock started."""
        return time.monotonic() - self._started if self._started is not None else 0.0
