"""Callbacks that keep a run directory consistent across interruptions."""

import csv
import os

import keras
import numpy as np
import pytest

from keras_transformer.training.callbacks import (
    AtomicBackupAndRestore,
    ResumableCSVLogger,
    save_weights_atomically,
)


def rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def tiny_model():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


def test_resume_drops_rows_of_the_repeated_epoch(tmp_path):
    path = tmp_path / "history.csv"
    x, y = np.ones((8, 2)), np.ones((8, 1))
    model = tiny_model()
    model.fit(x, y, epochs=3, verbose=0, callbacks=[ResumableCSVLogger(path)])
    assert [r["epoch"] for r in rows(path)] == ["0", "1", "2"]
    # Interrupted after epoch 2's row but before its backup: training resumes at epoch 2.
    model.fit(x, y, epochs=5, initial_epoch=2, verbose=0, callbacks=[ResumableCSVLogger(path)])
    history = rows(path)
    assert [r["epoch"] for r in history] == ["0", "1", "2", "3", "4"]
    assert all(float(r["loss"]) >= 0 for r in history)


def test_fresh_file_and_header(tmp_path):
    path = tmp_path / "h.csv"
    tiny_model().fit(
        np.ones((4, 2)), np.ones((4, 1)), epochs=1, verbose=0, callbacks=[ResumableCSVLogger(path)]
    )
    assert list(rows(path)[0]) == ["epoch", "loss"]


class Killed(Exception):
    """Stands for SIGKILL arriving while HDF5 writes the backup."""


def die_while_writing(model, after_saves):
    """Make `model.save_weights` leave a truncated file and die on save `after_saves`."""
    original, calls = model.save_weights, []

    def save_weights(filepath, *args, **kwargs):
        calls.append(filepath)
        if len(calls) <= after_saves:
            return original(filepath, *args, **kwargs)
        original(filepath, *args, **kwargs)
        with open(filepath, "r+b") as handle:  # cut the file short, as a kill would
            handle.truncate(os.path.getsize(filepath) // 3)
        raise Killed

    model.save_weights = save_weights


@pytest.mark.parametrize("callback", [AtomicBackupAndRestore, keras.callbacks.BackupAndRestore])
def test_backup_survives_a_kill_while_writing(tmp_path, callback):
    x, y = np.ones((8, 2)), np.ones((8, 1))
    backup = str(tmp_path / "backup")
    model = tiny_model()
    die_while_writing(model, after_saves=1)  # epoch 0 saved, killed while saving epoch 1
    with pytest.raises(Killed):
        model.fit(x, y, epochs=4, verbose=0, callbacks=[callback(backup)])
    resumed = tiny_model()
    if callback is keras.callbacks.BackupAndRestore:  # the defect this subclass fixes
        with pytest.raises(OSError):
            resumed.fit(x, y, epochs=4, verbose=0, callbacks=[callback(backup)])
        return
    history = resumed.fit(x, y, epochs=4, verbose=0, callbacks=[callback(backup)])
    assert len(history.history["loss"]) == 3  # resumed after epoch 0, the last complete backup
    assert not os.path.exists(backup)  # removed after the finished run, as in Keras


def test_atomic_save_keeps_the_previous_file(tmp_path):
    path = str(tmp_path / "best.weights.h5")
    model = tiny_model()
    model.layers[0].kernel.assign(np.full((2, 1), 3.0))
    save_weights_atomically(model, path)
    die_while_writing(model, after_saves=0)
    model.layers[0].kernel.assign(np.zeros((2, 1)))
    with pytest.raises(Killed):
        save_weights_atomically(model, path)
    restored = tiny_model()
    restored.load_weights(path)
    np.testing.assert_array_equal(restored.layers[0].kernel.numpy(), np.full((2, 1), 3.0))
    with pytest.raises(ValueError, match="must end in '.weights.h5'"):
        save_weights_atomically(model, str(tmp_path / "best.h5"))
