"""Every callback of a training run: the run directory's (kept consistent across
interruptions: history, best weights, backups), the time budget's, and convergence."""

import csv
import json
import logging
import math
import os
import time
from collections.abc import Callable

import keras
from keras import ops

from keras_transformer._validation import (
    check_int,
    check_number,
    check_positive_int,
    parse_duration,
)
from keras_transformer.runs import RunDirectory
from keras_transformer.training import rundir
from keras_transformer.training.schedule import BudgetSchedule

logger = logging.getLogger(__name__)
progress_logger = rundir.progress_logger
"""`TimeBudget`'s one line per epoch, shown by default (INFO), in place of Keras's progress bar."""


def _fsync_file(path: str) -> None:  # flush a closed file's data to disk
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def save_weights_atomically(model: keras.Model, filepath: str) -> None:
    """`model.save_weights(filepath)` via a temporary file and `os.replace`: a kill at any
    moment leaves a loadable `filepath` (ending in `.weights.h5`)."""
    if not filepath.endswith(".weights.h5"):
        raise ValueError(f"filepath={filepath!r} must end in '.weights.h5'")
    partial = os.path.join(os.path.dirname(filepath), f".partial-{os.path.basename(filepath)}")
    model.save_weights(partial, overwrite=True)
    _fsync_file(partial)
    os.replace(partial, filepath)


class ResumableCSVLogger(keras.callbacks.Callback):
    """One CSV row per finished epoch, continuous across interrupted runs.

    Unlike `CSVLogger(append=True)`, which logs an epoch twice when a kill falls between its
    row and its backup, rows from the resumed epoch on are dropped first; rows are fsynced.

    Args:
        filename: the CSV file (created if missing).

    Example:
    >>> import os, tempfile, numpy as np
    >>> x, path = np.ones((4, 2)), os.path.join(tempfile.mkdtemp(), "history.csv")
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> _ = model.fit(x, x[:, :1], epochs=2, verbose=0, callbacks=[ResumableCSVLogger(path)])
    >>> [row.split(",")[0] for row in open(path).read().split()]
    ['epoch', '0', '1']
    """

    def __init__(self, filename: str | os.PathLike):
        super().__init__()
        self.filename, self._fields, self._started = os.fspath(filename), None, False

    def on_train_begin(self, logs=None):
        self._started = False

    def on_epoch_begin(self, epoch, logs=None):
        if self._started:
            return
        self._started, fields, rows = True, None, []
        if os.path.isfile(self.filename):
            with open(self.filename, newline="") as handle:
                reader = csv.DictReader(handle)
                fields, rows = reader.fieldnames, list(reader)
        kept = [row for row in rows if row.get("epoch", "").isdigit() and int(row["epoch"]) < epoch]
        if fields is not None and len(kept) != len(rows):
            self._write(fields, kept, mode="w")
        self._fields = fields

    def on_epoch_end(self, epoch, logs=None):
        values = {"epoch": epoch, **{k: repr(float(v)) for k, v in sorted((logs or {}).items())}}
        if new := self._fields is None:
            self._fields = list(values)
        self._write(self._fields, [values], mode="w" if new else "a")

    def _write(self, fields, rows, mode):
        with open(self.filename, mode, newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
            if mode == "w":
                writer.writeheader()
            writer.writerows(rows)
        _fsync_file(self.filename)


class BestWeights(keras.callbacks.Callback):
    """`ModelCheckpoint(save_best_only=True, save_weights_only=True)` that never saves an epoch
    with a non-finite loss or `monitor`, keeping the last good weights.

    Args:
        filepath: where to write the weights (`*.weights.h5`).
        monitor: the logged value to minimise.
        initial_best: the best value reached before a resume.
    """

    def __init__(self, filepath: str, monitor: str = "val_loss", initial_best: float | None = None):
        super().__init__()
        self.filepath, self.monitor = filepath, monitor
        self.best = math.inf if initial_best is None else float(initial_best)

    def on_epoch_end(self, epoch, logs=None):
        values = [(logs or {}).get(key) for key in ("loss", self.monitor)]
        if any(v is None or not math.isfinite(float(v)) for v in values):
            return
        if float(values[1]) < self.best:
            self.best = float(values[1])
            save_weights_atomically(self.model, self.filepath)


class AtomicBackupAndRestore(keras.callbacks.BackupAndRestore):
    """`keras.callbacks.BackupAndRestore` whose backup survives a kill at any moment.

    Keras overwrites `latest.weights.h5` in place: a kill mid-write leaves a truncated file
    (`OSError: Unable to synchronously open file` on resume). Here both files are `os.replace`d.

    Args:
        backup_dir: the directory holding the backup (deleted after a finished run).
        save_freq: `"epoch"` or a number of batches, as in Keras.
    """

    def __init__(self, backup_dir: str, save_freq: str | int = "epoch"):
        super().__init__(backup_dir, save_freq=save_freq)

    def _save_model(self):
        os.makedirs(self.backup_dir, exist_ok=True)
        # The paths Keras's restore code reads (`latest.weights.h5`, `training_metadata.json`).
        save_weights_atomically(self.model, self._weights_path)
        partial = os.path.join(self.backup_dir, ".partial-training_metadata.json")
        with open(partial, "w") as handle:
            json.dump({"epoch": self._current_epoch, "batch": self._last_batch_seen}, handle)
        _fsync_file(partial)
        os.replace(partial, self._training_metadata_path)


class RunAccounting(keras.callbacks.Callback):
    """Counts a run's epochs and training seconds over every process that trained it.

    The totals live in the run directory's `state.json` (written after every epoch, at the end of
    `fit` and, through `save`, when `fit` is interrupted), so a resumed run adds to them.

    Args:
        run_dir: the run directory.
        clock: a `wallclock.RunClock`: its `used()` seconds are saved too (`wall_seconds`).

    Attributes:
        epochs_run, train_seconds: the totals so far (whole run).
        stopped_on_nan: whether a batch's loss was not finite.
    """

    def __init__(self, run_dir: str, clock=None):
        super().__init__()
        self.clock = clock
        self.run_dir, saved = run_dir, RunDirectory(run_dir).state()
        self._prior = float(saved.get("train_seconds", 0.0))
        self.epochs_run = int(saved.get("epochs_run", 0))
        self.train_seconds, self.stopped_on_nan, self._start = self._prior, False, None
        self._epochs = None

    def on_train_begin(self, logs=None):
        self._start = time.perf_counter()
        self._epochs = (self.params or {}).get("epochs")

    def on_epoch_begin(self, epoch, logs=None):
        if self.clock is None:
            return
        budget = self.clock.budget_seconds
        if budget is not None:  # the budget ends the run, not the epoch cap (BUDGET_EPOCHS)
            used = self.clock.used()
            self.clock.stage = f"during epoch {epoch + 1}, {used:.0f} s of the {budget:g} s budget"
        else:
            total = f" of {self._epochs}" if self._epochs else ""
            self.clock.stage = f"during epoch {epoch + 1}{total}"

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            self.stopped_on_nan = True

    def on_epoch_end(self, epoch, logs=None):
        self.epochs_run = epoch + 1
        self.save()

    def on_train_end(self, logs=None):
        self.save(fit_finished=True)

    def save(self, **extra) -> None:
        """Writes the totals (seconds up to now) to `state.json`."""
        if self._start is not None:
            self.train_seconds = self._prior + time.perf_counter() - self._start
        if self.clock is not None:
            extra.setdefault("wall_seconds", round(self.clock.used(), 3))
        RunDirectory(self.run_dir).update_state(
            epochs_run=self.epochs_run,
            stopped_on_nan=self.stopped_on_nan,
            train_seconds=round(self.train_seconds, 3),
            **extra,
        )


_CLOCKS = {"wall": time.perf_counter, "process": time.process_time}


class TimeBudget(keras.callbacks.Callback):
    """Stops `fit` when a time budget is spent and shapes a `BudgetSchedule` to it.

    Checked after every batch (validation still runs); every `update_every` batches and epoch
    end, `total_steps` becomes `steps_done * training_seconds / elapsed`. With `progress=True`
    each epoch ends with one line on the `keras_transformer.progress` logger (INFO, shown by
    default): `epoch 3: 42 s of 60 s (18 s left), loss 1.234, val_loss 1.456` — a budget run
    reports time, not `Epoch 3/1000` (run `fit` with `verbose=0`). Short epochs do not flood
    the output: an epoch's line is left out when the last one is less than
    `progress_seconds(budget)` old, except for the first and the last epoch.

    The budget may be a whole command's (`train --time-budget`): `used_seconds` were spent before
    `fit` (setup, earlier parts of a resumed run), `reserve_seconds` are kept for after it
    (evaluation, saving), and with `validation_batches` the validation pass that follows the stop
    is kept too. Training stops once `used + elapsed + reserve + one validation >= budget`.

    Args:
        budget_seconds: float > 0, or a duration string such as `"10m"`.
        clock: `"wall"` (time.perf_counter) or `"process"` (CPU time: fair on a shared machine).
        schedule: an optional `BudgetSchedule` to keep shaped to the budget.
        update_every: batches between two re-estimates of `total_steps`.
        progress: log one line per epoch with the time used and left.
        used_seconds: float >= 0, seconds of the budget spent before `fit`.
        reserve_seconds: float >= 0, seconds of the budget kept for after `fit`.
        validation_batches: int >= 0, batches of one validation pass: timed once one has run,
            before that estimated at a third of a training batch each.
        update_reserve: an optional `() -> seconds`, called at an epoch's end once the budget
            would stop training within the next two epochs: `reserve_seconds` estimated again
            (`train` times the evaluation's searches with the weights trained so far, which
            decode shorter than the untrained ones it was first timed with). Its time is
            counted.

    Attributes:
        elapsed: seconds used so far (after training: in total).
        stopped_step: the optimizer step the budget stopped at (inside an epoch or at its end),
            or None when training ended before the budget.
        stopped: whether the budget ended training.
        stopped_in_epoch: the 0-based epoch the budget stopped inside (before its last batch),
            or None.
        batch_seconds: mean wall seconds of a training batch after the first, or None.

    Example:
    >>> schedule = BudgetSchedule(1e-3, warmup_steps=10, total_steps=100)
    >>> TimeBudget("1m", clock="process", schedule=schedule).budget_seconds
    60.0
    """

    def __init__(
        self,
        budget_seconds: float | str,
        *,
        clock: str = "wall",
        schedule: BudgetSchedule | None = None,
        update_every: int = 20,
        progress: bool = False,
        used_seconds: float = 0.0,
        reserve_seconds: float = 0.0,
        validation_batches: int = 0,
        update_reserve: Callable[[], float] | None = None,
    ) -> None:
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
        self.update_every = check_positive_int("update_every", update_every)
        self.progress = bool(progress)
        self.used_seconds = check_number("used_seconds", used_seconds, 0.0)
        self.reserve_seconds = check_number("reserve_seconds", reserve_seconds, 0.0)
        self.validation_batches = check_int("validation_batches", validation_batches, minimum=0)
        self._start, self._first_step, self.elapsed, self.stopped_step = None, 0, 0.0, None
        self._total = None  # the schedule's total_steps, as last set
        self.stopped_in_epoch, self._epoch, self._batches = None, 0, 0
        self._validation_batch_seconds, self._test_start, self._test_batches = None, None, 0
        self._first_batch_end = self._last_batch_end = 0.0
        self.update_reserve, self._epoch_start = update_reserve, 0.0
        self._last_line = None  # when the last progress line was written (`elapsed`)

    @property
    def batch_seconds(self) -> float | None:
        """Mean wall seconds of a training batch after the first (which traces the step), with
        the validation passes between them; None before the second batch."""
        if self._batches < 2:
            return None
        return (self._last_batch_end - self._first_batch_end) / (self._batches - 1)

    def validation_seconds(self) -> float:
        """Seconds of the forward passes kept after the stop (`validation_batches`): timed per
        batch on the last validation, else a third of a training batch each."""
        if self._validation_batch_seconds is not None:
            return self.validation_batches * self._validation_batch_seconds
        return self.validation_batches * (self.batch_seconds or 0.0) / 3.0

    def training_seconds(self) -> float:
        """Seconds of this `fit` that the budget leaves to training (validation included)."""
        kept = self.used_seconds + self.reserve_seconds + self.validation_seconds()
        return self.budget_seconds - kept

    def _steps_done(self) -> int:
        return int(ops.convert_to_numpy(self.model.optimizer.iterations)) - self._first_step

    def _reshape(self) -> None:
        done = 0 if self.schedule is None or self.elapsed <= 0 else self._steps_done()
        if done > 0:
            fit = int(done * max(0.0, self.training_seconds()) / self.elapsed)
            self.schedule.set_total_steps(self._first_step + max(fit, done + 1))
            self._total = self.schedule.total_steps

    def on_train_begin(self, logs=None):
        self._start = self._now()
        self._first_step = int(ops.convert_to_numpy(self.model.optimizer.iterations))
        self.elapsed, self.stopped_step, self._batches = 0.0, None, 0
        self.stopped_in_epoch, self._epoch_start = None, 0.0
        self._total = None if self.schedule is None else self.schedule.total_steps

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_test_begin(self, logs=None):
        self._test_start, self._test_batches = self._now(), 0

    def on_test_batch_end(self, batch, logs=None):
        self._test_batches += 1

    def on_test_end(self, logs=None):
        if self._test_start is not None and self._test_batches:
            seconds = self._now() - self._test_start
            self._validation_batch_seconds = seconds / self._test_batches

    def on_train_batch_end(self, batch, logs=None):
        self.elapsed = self._now() - self._start
        self._batches += 1
        self._last_batch_end = self.elapsed
        if self._batches == 1:
            self._first_batch_end = self.elapsed
        # The next update is step `first + batches + 1` of the schedule: past `total_steps` the
        # schedule holds its after-the-end rate (for a later fit), so the decay moves first.
        beyond = self._total is not None and self._first_step + self._batches + 1 > self._total
        if self._batches % self.update_every == 0 or beyond:
            self._reshape()
        if self.elapsed >= self.training_seconds():
            self.model.stop_training = True
            if self.stopped_step is None:
                self.stopped_step = self._first_step + self._steps_done()
                steps = (self.params or {}).get("steps")
                if steps is None or batch + 1 < steps:  # inside the epoch, not at its end
                    self.stopped_in_epoch = self._epoch

    @property
    def stopped(self) -> bool:
        """Whether the budget ended training."""
        return self.stopped_step is not None

    @property
    def stopped_after_batches(self) -> int:
        """Batches this `fit` trained before the budget stopped it (0 if it did not)."""
        return 0 if self.stopped_step is None else self.stopped_step - self._first_step

    def on_epoch_end(self, epoch, logs=None):
        self.elapsed = self._now() - self._start
        epoch_seconds, self._epoch_start = self.elapsed - self._epoch_start, self.elapsed
        near_end = self.training_seconds() - self.elapsed < 2 * epoch_seconds
        if self.update_reserve is not None and self.stopped_step is None and near_end:
            reserve = check_number("update_reserve()", self.update_reserve(), 0.0)
            logger.info(
                "time kept for after training: %.0f s (was %.0f s), timed again with the "
                "weights of epoch %d",
                reserve,
                self.reserve_seconds,
                epoch + 1,
            )
            self.reserve_seconds = reserve
            self.elapsed = self._now() - self._start
        # Another epoch needs at least a batch and a validation pass.
        if self.elapsed + (self.batch_seconds or 0.0) >= self.training_seconds():
            self.model.stop_training = True
            if self.stopped_step is None:  # the budget ran out with the epoch's last batch
                self.stopped_step = self._first_step + self._steps_done()
        elif self.stopped_step is None:
            self._reshape()
        if self.progress and self._line_due(epoch):
            used = self.used_seconds + self.elapsed
            left = max(0.0, self.budget_seconds - used)
            values = "".join(
                f", {name} {float(value):.4g}"
                for name, value in sorted((logs or {}).items())
                if name in ("loss", "val_loss", "masked_accuracy", "val_masked_accuracy")
            )
            progress_logger.info(
                "epoch %d: %.0f s of %.0f s (%.0f s left)%s",
                epoch + 1,
                used,
                self.budget_seconds,
                left,
                values,
            )

    def _line_due(self, epoch: int) -> bool:
        """The first epoch's line, the last one's, and others at least `progress_seconds`
        after the previous line."""
        last, self._last_line = self._last_line, self.elapsed
        final = epoch + 1 >= int((self.params or {}).get("epochs") or 0)
        if last is None or self.model.stop_training or final:
            return True
        if self.elapsed - last >= progress_seconds(self.budget_seconds):
            return True
        self._last_line = last
        return False

    def on_train_end(self, logs=None):
        self.elapsed = self._now() - self._start


def progress_seconds(budget_seconds: float) -> float:
    """The least time between two epoch lines of a budget run: 5 s, or a hundredth of the
    budget when that is longer (at most about 100 lines, however short the epochs).

    >>> progress_seconds(60), progress_seconds(1800)
    (5.0, 18.0)
    """
    return max(5.0, budget_seconds / 100)


class SequencesConverged(keras.callbacks.Callback):
    """Stops training once `val_sequence_accuracy` has converged.

    Converged: `ceiling` of the sequences are right, or the best rate >= `floor` was not beaten
    by `min_delta` for `patience` epochs (below `floor`, flat epochs may be a dip at the peak
    learning rate). Under a `BudgetSchedule`, the learning rate then first decays to zero over
    one more epoch: weights taken near its peak are noisy."""

    def __init__(
        self,
        floor: float = 0.99,
        min_delta: float = 0.002,
        patience: int = 1,
        ceiling: float = 0.999,
    ):
        super().__init__()
        self.floor, self.min_delta, self.patience = floor, min_delta, patience
        self.ceiling, self.best, self.flat, self.cooling = ceiling, None, 0, False
        self.converged = False  # whether this callback ended training

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get("val_sequence_accuracy")
        if self.cooling or value is None or not math.isfinite(value):
            self.model.stop_training |= self.cooling  # the cool-down epoch is over
            self.converged |= self.cooling
            return
        if self.best is None or value >= self.best + self.min_delta:
            self.flat = 0
        elif self.best >= self.floor:
            self.flat += 1
        self.best = value if self.best is None else max(self.best, value)
        if value < self.ceiling and self.best >= self.floor and self._cool_down():
            return
        if value >= self.ceiling or self.flat >= self.patience:
            logger.info("validation sequence accuracy %.4f has converged: stopping", value)
            self.model.stop_training = True
            self.converged = True

    def _cool_down(self) -> bool:
        """Ends a `BudgetSchedule`'s decay one epoch from now; False if there is none."""
        optimizer = getattr(self.model, "optimizer", None)
        schedule = getattr(optimizer, "_learning_rate", None)
        steps = (self.params or {}).get("steps")
        if not hasattr(schedule, "set_total_steps") or not steps:
            return False
        schedule.set_total_steps(int(optimizer.iterations) + steps)
        logger.info("validation sequence accuracy has converged: one epoch of rate decay")
        self.cooling = True
        return True
