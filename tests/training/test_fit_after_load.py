"""`model.fit` after `keras.models.load_model` of a saved run keeps learning.

A run's optimizer is saved with its `BudgetSchedule`, whose decay ends at rate 0 on the run's
last step; the schedule then holds `hold_fraction` of the peak, so that a student who loads a
run and calls `fit` (twice) sees the weights move and the loss fall, with no recompiling."""

import json

import keras
import numpy as np
import pytest

import keras_transformer as kt
from keras_transformer import data
from keras_transformer.cli import main
from keras_transformer.training.datasets import with_known_length
from keras_transformer.training.schedule import BudgetSchedule
from tests.helpers import TINY_MODEL_ARGS

TINY = [
    *("--num-train", "256", "--num-validation", "32", "--num-test", "16"),
    *TINY_MODEL_ARGS,
    *("--batch-size", "32", "--max-length", "24", "--jit-compile", "off"),
]


def _train(out, *flags) -> None:
    assert main(["train", *TINY, *flags, "--out", str(out)]) == 0


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A run by epochs and the same run continued with `--init-from` (both planned schedules)."""
    root = tmp_path_factory.mktemp("fit_after_load")
    _train(root / "epochs", "--epochs", "2")
    _train(root / "continued", "--epochs", "3", "--init-from", str(root / "epochs"))
    return root


def _load(run_dir):
    kt.register()
    return keras.models.load_model(run_dir / "model.keras", safe_mode=True)


def _train_batches(run_dir):
    """The run's own kind of data (a fresh numbers sample), batched as `train` does."""
    config = json.loads((run_dir / "config.json").read_text())
    source = data.WordPieceTokenizer.load(run_dir / "tokenizers" / "source")
    target = data.WordPieceTokenizer.load(run_dir / "tokenizers" / "target")
    task = data.load_task("numbers", num_train=256, seed=7)
    batches = data.make_dataset(
        task.train, source, target, batch_size=32, max_length=config["max_length"], seed=7
    )
    return with_known_length(batches)[0]


@pytest.mark.parametrize("name", ["epochs", "continued"])
def test_fit_twice_after_load_changes_the_weights_and_lowers_the_loss(runs, name):
    model = _load(runs / name)
    schedule = model.optimizer._learning_rate
    assert isinstance(schedule, BudgetSchedule)
    steps_done = int(model.optimizer.iterations.numpy())
    assert steps_done >= schedule.total_steps  # the run's decay is over: rate 0 without a hold
    assert float(model.optimizer.learning_rate) == pytest.approx(
        schedule.hold_fraction * schedule.peak_learning_rate
    )
    batches = _train_batches(runs / name)
    before = [w.copy() for w in model.get_weights()]
    losses = []
    for _ in range(2):
        history = model.fit(batches, epochs=2, verbose=0, shuffle=False)
        losses.append(history.history["loss"])
        after = model.get_weights()
        moved = max(float(np.abs(a - b).max()) for a, b in zip(before, after, strict=True))
        assert moved > 1e-5, f"fit {len(losses)} after load_model changed no weight"
        before = [w.copy() for w in after]
    first, last = losses[0][0], losses[-1][-1]
    assert last < first, f"the loss did not fall over two fits: {losses}"


def test_a_schedule_saved_before_hold_fraction_existed_loads_with_the_hold():
    # Runs saved before this release have no "hold_fraction" in their config.
    old = {"peak_learning_rate": 1e-3, "warmup_steps": 10, "total_steps": 100}
    schedule = BudgetSchedule.from_config({**old, "final_fraction": 0.0})
    assert float(schedule(500)) == pytest.approx(1e-3 * BudgetSchedule.HOLD_FRACTION)
    assert float(schedule(99)) == pytest.approx(0.0, abs=1e-9)  # the run's own last step


def test_hold_fraction_zero_keeps_the_rate_at_its_end():
    schedule = BudgetSchedule(1e-3, warmup_steps=10, total_steps=100, hold_fraction=0.0)
    assert float(schedule(500)) == 0.0
    with pytest.raises(ValueError, match="hold_fraction"):
        BudgetSchedule(1e-3, hold_fraction=1.5)
