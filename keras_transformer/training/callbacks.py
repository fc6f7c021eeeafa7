"""Callbacks that keep a run directory consistent across interruptions."""

import csv
import json
import math
import os
import signal

import keras

KILL_AT = "KERAS_TRANSFORMER_TEST_KILL_AT"  # test hook only: names where `kill_point` kills


def kill_point(name: str) -> None:
    """Test hook: SIGKILL this process when `$KERAS_TRANSFORMER_TEST_KILL_AT` equals `name`:
    `mid_epoch:E` (after batch 1 of epoch E), `after_checkpoint:E` (after epoch E's best
    checkpoint, before its history row), `before_plots` or `before_metrics`."""
    if os.environ.get(KILL_AT) == name:
        os.kill(os.getpid(), signal.SIGKILL)


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
        kill_point(f"after_checkpoint:{epoch}")  # test hook: no-op unless set

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if batch == 1:
            kill_point(f"mid_epoch:{self._epoch}")  # test hook: no-op unless set


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
