"""Callbacks that keep a run directory consistent across interruptions."""

from __future__ import annotations

import csv
import json
import math
import os
import signal

import keras

KILL_AT = "KERAS_TRANSFORMER_TEST_KILL_AT"
"""Test hook only: the environment variable naming where `kill_point` SIGKILLs training."""


def kill_point(name: str) -> None:
    """Test hook: SIGKILL this process when `$KERAS_TRANSFORMER_TEST_KILL_AT` equals `name`.

    The reliability tests kill training at named points, deterministically,
    and check that the same command resumes to a consistent run directory.
    Points: `mid_epoch:E` (after batch 1 of epoch E), `after_checkpoint:E`
    (after the best checkpoint of epoch E, before its history row),
    `before_plots` (model.keras written) and `before_metrics` (plots written,
    metrics.json not). Unset (always, outside the tests) it does nothing.
    """
    if os.environ.get(KILL_AT) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def _fsync_file(path: str) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def save_weights_atomically(model: keras.Model, filepath: str) -> None:
    """`model.save_weights(filepath)`, but a kill at any moment leaves a loadable file.

    The weights are written to a temporary `*.weights.h5` file beside
    `filepath`, flushed to disk, then moved over `filepath` with `os.replace`
    (atomic on POSIX and Windows). A process killed while HDF5 is writing
    leaves only the temporary file behind; `filepath` keeps the previous
    complete weights (or does not exist yet).

    Args:
        model: the model whose weights to save.
        filepath: the destination, ending in `.weights.h5`.
    """
    if not filepath.endswith(".weights.h5"):
        raise ValueError(f"filepath={filepath!r} must end in '.weights.h5'")
    directory, name = os.path.split(filepath)
    partial = os.path.join(directory, f".partial-{name}")
    model.save_weights(partial, overwrite=True)
    _fsync_file(partial)
    os.replace(partial, filepath)


class ResumableCSVLogger(keras.callbacks.Callback):
    """One CSV row per finished epoch, continuous across interrupted runs.

    Keras's `CSVLogger(append=True)` appends whatever epochs run, so a run
    killed after the row of epoch `k` was written but before the
    `BackupAndRestore` state of epoch `k` was saved repeats epoch `k` on
    resume and logs it twice. This logger looks at the first epoch it is told
    about (the one `BackupAndRestore` resumes from), drops any rows from that
    epoch on, and appends; each row is flushed and fsynced as it is written.
    The result always has epochs `0 .. N-1` in order, without duplicates.

    Args:
        filename: the CSV file (created if missing).

    Example:

    >>> import os, tempfile, numpy as np
    >>> path = os.path.join(tempfile.mkdtemp(), "history.csv")
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=2, verbose=0,
    ...               callbacks=[ResumableCSVLogger(path)])
    >>> [row.split(",")[0] for row in open(path).read().split()]
    ['epoch', '0', '1']
    """

    def __init__(self, filename: str | os.PathLike):
        super().__init__()
        self.filename = os.fspath(filename)
        self._fields: list[str] | None = None
        self._started = False

    def _read(self) -> tuple[list[str] | None, list[dict]]:
        if not os.path.isfile(self.filename):
            return None, []
        with open(self.filename, newline="") as handle:
            reader = csv.DictReader(handle)
            return reader.fieldnames, list(reader)

    def on_train_begin(self, logs=None):
        self._started = False

    def on_epoch_begin(self, epoch, logs=None):
        if self._started:
            return
        self._started = True
        fields, rows = self._read()
        kept = [row for row in rows if row.get("epoch", "").isdigit() and int(row["epoch"]) < epoch]
        if fields is not None and len(kept) != len(rows):
            self._write(fields, kept, mode="w")
        self._fields = fields

    def on_epoch_end(self, epoch, logs=None):
        values = {"epoch": epoch}
        for key, value in sorted((logs or {}).items()):
            value = float(value)
            values[key] = "nan" if math.isnan(value) else repr(value)
        if self._fields is None:
            self._fields = list(values)
            self._write(self._fields, [], mode="w")
        self._write(self._fields, [values], mode="a")

    def _write(self, fields, rows, mode):
        with open(self.filename, mode, newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
            if mode == "w":
                writer.writeheader()
            writer.writerows(rows)
            handle.flush()
            os.fsync(handle.fileno())


class BestWeights(keras.callbacks.Callback):
    """Save the weights whenever `monitor` reaches a new minimum, never after NaN.

    Like `keras.callbacks.ModelCheckpoint(save_best_only=True,
    save_weights_only=True)`, except that an epoch whose training loss or
    monitored value is NaN or infinite is never saved (its weights are
    already broken), so after a divergence the file still holds the last
    good weights. `initial_best` continues the comparison of a resumed run.

    Args:
        filepath: where to write the weights (`*.weights.h5`).
        monitor: the logged value to minimise.
        initial_best: the best value reached before a resume.
    """

    def __init__(self, filepath: str, monitor: str = "val_loss", initial_best: float | None = None):
        super().__init__()
        self.filepath = filepath
        self.monitor = monitor
        self.best = math.inf if initial_best is None else float(initial_best)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        values = [logs.get("loss"), logs.get(self.monitor)]
        if any(v is None or not math.isfinite(float(v)) for v in values):
            return
        if float(logs[self.monitor]) < self.best:
            self.best = float(logs[self.monitor])
            save_weights_atomically(self.model, self.filepath)
        kill_point(f"after_checkpoint:{epoch}")  # test hook: no-op unless set

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if batch == 1:
            kill_point(f"mid_epoch:{self._epoch}")  # test hook: no-op unless set


class AtomicBackupAndRestore(keras.callbacks.BackupAndRestore):
    """`keras.callbacks.BackupAndRestore` whose backup survives a kill at any moment.

    Keras's callback overwrites `latest.weights.h5` in place: a process killed
    (SIGKILL, preemption, out of memory) while HDF5 is writing it leaves a
    truncated file, and the next run fails in `fit` with
    `OSError: Unable to synchronously open file`. This subclass writes the
    weights and the training metadata (the epoch to resume from) to temporary
    files, flushes them, and moves each into place with `os.replace`, weights
    first: at every instant the backup directory holds a complete state.
    Restoring is Keras's own code, unchanged.

    Args:
        backup_dir: the directory holding the backup (deleted after a
            finished run, as in Keras).
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
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, self._training_metadata_path)
