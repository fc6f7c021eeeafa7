"""The wall-clock time of a whole run, over every process that ran it.

`--time-budget` is the command's wall time as a user measures it (`time keras-transformer train
...`): start-up, data, vocabularies, training, evaluation and plots. `RunClock` counts from the
process's start (the command line passes it; from Python, `train` starts it), adds the seconds of
the earlier processes of an interrupted run (kept in `state.json`), and says what is left."""

import os
import time

__all__ = ["FINISH_SECONDS", "RunClock", "process_start_time"]

FINISH_SECONDS = 3.0
"""Seconds a translation run spends after its evaluation: `model.save`, the curves and the
cross-attention plot, `metrics.json` (measured 0.4 + 0.5 + 2.3 s for the numbers task's
default model on this 2-core CPU, under load)."""


def process_start_time() -> float | None:
    """`time.time()` at which this process started (Linux: `/proc/self/stat`), else None.

    Example:
    >>> started = process_start_time()
    >>> started is None or 0.0 <= time.time() - started < 24 * 3600 * 365
    True
    """
    try:
        with open("/proc/self/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime", encoding="ascii") as handle:
            uptime = float(handle.read().split()[0])
        ticks = int(fields[19])  # field 22, starttime: clock ticks after boot
        return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class RunClock:
    """Seconds used by a run: this process's (since `started`) plus those of earlier ones, and
    what it is doing now (`stage`: "while loading the data", "during epoch 3 of 12"), which the
    line an interruption prints names (`train` hands it to the command with the interruption).

    Args:
        budget_seconds: the run's whole budget (None: no budget).
        started: `time.time()` this process's part began (None: now).
        prior_seconds: wall seconds of the earlier processes of the same run.

    Example:
    >>> clock = RunClock(60.0, started=time.time() - 10.0, prior_seconds=20.0)
    >>> round(clock.used()), round(clock.left())
    (30, 30)
    """

    def __init__(
        self,
        budget_seconds: float | None = None,
        *,
        started: float | None = None,
        prior_seconds: float = 0.0,
    ) -> None:
        self.budget_seconds = budget_seconds
        self.started = time.time() if started is None else float(started)
        self.prior_seconds = float(prior_seconds)
        self.stage = "while starting"

    def elapsed(self) -> float:
        """Seconds of this process's part."""
        return max(0.0, time.time() - self.started)

    def used(self) -> float:
        """Seconds of the whole run so far (earlier parts and this one)."""
        return self.prior_seconds + self.elapsed()

    def left(self) -> float | None:
        """Seconds of the budget left (negative once overspent; None without a budget)."""
        return None if self.budget_seconds is None else self.budget_seconds - self.used()
