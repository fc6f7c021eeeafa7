"""Training to a time budget (`--time-budget 10m`): a schedule shaped to it, a callback to stop.

`TimeBudget` re-estimates where `BudgetSchedule`'s cosine decay ends from the measured pace:
annealing to zero when time runs out beats the paper's schedule (docs/performance.md).

Example:
>>> schedule = BudgetSchedule(1e-3, warmup_steps=10, total_steps=100)
>>> round(float(schedule(9)), 6), round(float(schedule(99)), 6)
(0.001, 0.0)
>>> callback = TimeBudget(60, clock="process", schedule=schedule)
>>> callback.budget_seconds
60.0
"""

import math
import numbers
import re
import time
from typing import Any

import keras
from keras import ops

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|)\s*$")


def parse_duration(text: str | float | int) -> float:
    """Seconds in a duration such as `"90"`, `"90s"`, `"10m"`, `"1.5h"` (a number is seconds).

    Example:
    >>> parse_duration("10m"), parse_duration("90s"), parse_duration(45)
    (600.0, 90.0, 45.0)
    """
    if isinstance(text, numbers.Real) and not isinstance(text, bool):
        seconds = float(text)
    else:
        match = _DURATION.match(str(text)) if isinstance(text, str) else None
        if match is None:
            raise ValueError(f"time budget {text!r} is not a duration; write e.g. 90s, 10m or 1.5h")
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"time budget {text!r} must be more than 0 seconds, e.g. 10m")
    return seconds


def _check_positive(name: str, value: Any, integer: bool = True) -> float | int:
    kinds = (numbers.Integral,) if integer else (numbers.Real,)
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value):
        raise ValueError(f"{name}={value!r} must be {'an int' if integer else 'a number'} > 0")
    if value <= 0:
        raise ValueError(f"{name}={value!r} must be > 0")
    return int(value) if integer else float(value)


@keras.saving.register_keras_serializable("keras_transformer")
class BudgetSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up, then cosine decay that ends on step `total_steps`.

    After the warm-up, `rate = peak * (f + (1 - f) * (1 + cos(pi * p)) / 2)`, `f` being
    `final_fraction` and `p` the fraction of the decay done. `total_steps` is a variable.

    Args:
        peak_learning_rate: float > 0, the rate at the end of the warm-up.
        warmup_steps: int > 0, steps of linear warm-up.
        total_steps: int > 0, the step where the decay ends (first estimate).
        final_fraction: float in [0, 1), the rate at the end as a fraction of the peak.

    Call arguments:
        step: scalar 0-based optimizer iteration.

    Returns:
        Scalar float32 tensor, the learning rate.
    """

    def __init__(
        self, peak_learning_rate: float, warmup_steps: int = 200, total_steps: int = 10_000,
        final_fraction: float = 0.0,
    ) -> None:  # fmt: skip
        super().__init__()
        self.peak_learning_rate = _check_positive("peak_learning_rate", peak_learning_rate, False)
        self.warmup_steps = _check_positive("warmup_steps", warmup_steps)
        self._total = keras.Variable(
            0.0, dtype="float32", trainable=False, name="budget_total_steps"
        )
        self.set_total_steps(total_steps)
        bad = isinstance(final_fraction, bool) or not isinstance(final_fraction, numbers.Real)
        if bad or not 0 <= final_fraction < 1:
            raise ValueError(f"final_fraction={final_fraction!r} must be in [0, 1), e.g. 0.0")
        self.final_fraction = float(final_fraction)

    @property
    def total_steps(self) -> int:
        """The step where the decay ends (the current estimate)."""
        return int(round(float(ops.convert_to_numpy(self._total))))

    def set_total_steps(self, total_steps: int) -> None:
        """Moves the end of the decay (kept at least `warmup_steps + 1`)."""
        total_steps = _check_positive("total_steps", total_steps)
        self._total.assign(float(max(total_steps, self.warmup_steps + 1)))

    def __call__(self, step: Any) -> Any:
        step = ops.cast(step, "float32") + 1.0
        warmup = float(self.warmup_steps)
        progress = ops.clip((step - warmup) / ops.maximum(self._total - warmup, 1.0), 0.0, 1.0)
        cosine = 0.5 * (1.0 + ops.cos(math.pi * progress))
        falling = self.final_fraction + (1.0 - self.final_fraction) * cosine
        return self.peak_learning_rate * ops.where(step < warmup, step / warmup, falling)

    def get_config(self) -> dict[str, Any]:
        return {
            "peak_learning_rate": self.peak_learning_rate, "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps, "final_fraction": self.final_fraction,
        }  # fmt: skip


_CLOCKS = {"wall": time.perf_counter, "process": time.process_time}


class TimeBudget(keras.callbacks.Callback):
    """Stops `fit` when a time budget is spent and shapes a `BudgetSchedule` to it.

    Checked after every batch (validation still runs); every `update_every` batches and epoch
    end, `total_steps` becomes `steps_done * budget / elapsed`.

    Args:
        budget_seconds: float > 0, or a duration string such as `"10m"`.
        clock: `"wall"` (time.perf_counter) or `"process"` (CPU time: fair on a shared machine).
        schedule: an optional `BudgetSchedule` to keep shaped to the budget.
        update_every: batches between two re-estimates of `total_steps`.

    Attributes:
        elapsed: seconds used so far (after training: in total).
        stopped_step: the optimizer step the budget stopped at, or None.
    """

    def __init__(
        self, budget_seconds: float | str, *, clock: str = "wall",
        schedule: BudgetSchedule | None = None, update_every: int = 20,
    ) -> None:  # fmt: skip
        super().__init__()
        self.budget_seconds = parse_duration(budget_seconds)
        if clock not in _CLOCKS:
            raise ValueError(f"clock={clock!r} must be 'wall' or 'process'")
        if schedule is not None and not isinstance(schedule, BudgetSchedule):
            raise TypeError(
                f"schedule={schedule!r} must be a BudgetSchedule (or None); other schedules "
                "cannot be reshaped to the budget"
            )
        self.clock, self.schedule, self._now = clock, schedule, _CLOCKS[clock]
        self.update_every = int(_check_positive("update_every", update_every))
        self._start, self._first_step, self.elapsed, self.stopped_step = None, 0, 0.0, None

    def _steps_done(self) -> int:
        return int(ops.convert_to_numpy(self.model.optimizer.iterations)) - self._first_step

    def _reshape(self) -> None:
        done = 0 if self.schedule is None or self.elapsed <= 0 else self._steps_done()
        if done > 0:
            fit = int(done * self.budget_seconds / self.elapsed)
            self.schedule.set_total_steps(self._first_step + max(fit, done + 1))

    def on_train_begin(self, logs=None):
        self._start = self._now()
        self._first_step = int(ops.convert_to_numpy(self.model.optimizer.iterations))
        self.elapsed, self.stopped_step, self._batches = 0.0, None, 0

    def on_train_batch_end(self, batch, logs=None):
        self.elapsed = self._now() - self._start
        self._batches += 1
        if self._batches % self.update_every == 0:
            self._reshape()
        if self.elapsed >= self.budget_seconds:
            self.model.stop_training = True
            if self.stopped_step is None:
                self.stopped_step = self._first_step + self._steps_done()

    def on_epoch_end(self, epoch, logs=None):
        self.elapsed = self._now() - self._start
        if self.elapsed >= self.budget_seconds:
            self.model.stop_training = True
        elif self.stopped_step is None:
            self._reshape()

    def on_train_end(self, logs=None):
        self.elapsed = self._now() - self._start


def planned_schedule(config, steps_per_epoch: int, tokens_per_batch: float) -> BudgetSchedule:
    """The `BudgetSchedule` of a run whose `config.planned_schedule` is true.

    Steps: those the budget buys (`sizing.estimate_steps`), else `epochs * steps_per_epoch`; an
    unset warm-up becomes 8 % of them, written to `config.warmup_steps`."""
    from keras_transformer.data import sizing

    if config.time_budget is not None:
        steps = sizing.estimate_steps(
            config.time_budget, tokens_per_batch, num_layers=config.num_layers,
            d_model=config.d_model, dff=config.dff, vocab_size=config.vocab_size,
        )  # fmt: skip
    else:
        steps = config.epochs * max(1, steps_per_epoch)
    if config.warmup_steps is None:
        config.warmup_steps = sizing.choose_warmup(steps)
    peak = sizing.peak_learning_rate(config.d_model)
    return BudgetSchedule(peak, config.warmup_steps, max(steps, 1))
