"""`train --task tsv` sizes itself from the data; `--time-budget` ends training on time."""

import json

import keras
import pytest

from keras_transformer.cli import main
from keras_transformer.data import load_task
from keras_transformer.training.callbacks import progress_seconds
from keras_transformer.training.schedule import BudgetSchedule
from tests.helpers import SMALL_MODEL_ARGS

BUDGET = 40
"""Seconds of `--time-budget` of the run that the budget stops."""


@pytest.fixture(scope="module")
def pairs_tsv(tmp_path_factory):
    """Sentence-like pairs (English number words -> French), as a user's TSV."""
    task = load_task("numbers", source_lang="en", target_lang="fr", num_train=600, seed=3)
    path = tmp_path_factory.mktemp("tsv") / "pairs.tsv"
    path.write_text("".join(f"{s}\t{t}\n" for s, t in task.train), encoding="utf-8")
    return path


def tsv_train(pairs_tsv, out, *options: str) -> list[str]:
    """The argv of `train --task tsv` on `pairs_tsv` into `out`, XLA off, with `options`."""
    return ["train", "--task", "tsv", "--data", str(pairs_tsv), "--out", str(out), *options]


def run_files(run_dir):
    config = json.loads((run_dir / "config.json").read_text())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    return config, metrics


def test_sizes_left_out_come_from_the_data_and_given_ones_win(pairs_tsv, tmp_path):
    out = tmp_path / "run"
    argv = tsv_train(pairs_tsv, out, *SMALL_MODEL_ARGS, "--epochs", "2", "--jit-compile", "off")
    assert main(argv) == 0
    config, metrics = run_files(out)
    chosen = config["sized_from_data"]
    assert set(chosen) == {"vocab_size", "max_length", "dropout"}  # the rest was given
    assert chosen["dropout"] == 0.1 == config["dropout"]  # not the 2 x 64 rung
    assert (config["d_model"], config["num_layers"], config["epochs"]) == (32, 1, 2)
    # 600 short pairs of few words: the smallest length of the rules; the vocabulary the
    # corpus has (under the smallest rule, 1000), recorded as learnt
    assert chosen["max_length"] == 16 == config["max_length"]
    assert chosen["vocab_size"] == max(config["source_vocab_size"], config["target_vocab_size"])
    assert chosen["vocab_size"] < config["vocab_size_requested"] == 1000
    assert config["warmup_steps"] >= 10  # 8 % of 2 epochs' steps, at least 10
    optimizer = keras.models.load_model(out / "model.keras").optimizer
    schedule = optimizer._learning_rate
    assert isinstance(schedule, BudgetSchedule)  # warm-up, then cosine to 0 at the end
    # without a budget the decay ends with the last step of the last epoch
    assert schedule.total_steps == config["planned_steps"] == int(optimizer.iterations)
    assert "time_budget_seconds" not in metrics
    assert (out / "plots" / "learning_rate.png").stat().st_size > 0


def test_a_time_budget_stops_training_and_keeps_the_best_checkpoint(
    pairs_tsv, tmp_path, capsys, caplog
):
    out = tmp_path / "run"
    # 40 s: setup and the evaluation's reserve (10-20 s on a busy 2-core CPU) and a few
    # epochs; the budget is waited out, so every second more is a second of the suite
    argv = tsv_train(pairs_tsv, out, "--time-budget", f"{BUDGET}s", "--jit-compile", "off")
    argv += ["--batch-size", "16"]
    with caplog.at_level("INFO", logger="keras_transformer.progress"):
        assert main(argv) == 0
    config, metrics = run_files(out)
    # the budget, not an epoch cap of 1000, is what the run was asked to do
    assert config["time_budget"] == BUDGET and config["epochs"] is None
    assert "epochs" not in config["sized_from_data"]
    assert "Epoch 1/" not in capsys.readouterr().out  # time, not epochs, is reported
    progress = [r.getMessage() for r in caplog.records if r.name == "keras_transformer.progress"]
    epochs = [line for line in progress if line.startswith("epoch ")]
    # the first and the last epoch, and between them a line at most every few seconds
    assert 1 <= len(epochs) <= metrics["epochs_run"]
    assert epochs[0].startswith("epoch 1: ") and f" of {BUDGET} s (" in epochs[0]
    assert epochs[-1].startswith(f"epoch {metrics['epochs_run']}: ")
    used = [float(line.split(": ", 1)[1].split(" s of", 1)[0]) for line in epochs]
    gap = progress_seconds(BUDGET)
    assert all(later - earlier >= gap - 1 for earlier, later in zip(used, used[1:-1], strict=False))
    assert not any(" of 1000" in line for line in progress)  # the epoch cap is not shown
    assert set(config["sized_from_data"]) >= {"num_layers", "d_model", "vocab_size"}
    assert metrics["time_budget_seconds"] == BUDGET
    assert metrics["stopped_by_time_budget"] is True
    assert metrics["epochs_run"] < 1000
    # The budget is the whole command's: setup and evaluation are inside it, not after it.
    parts = metrics["setup_seconds"] + metrics["train_seconds"] + metrics["evaluation_seconds"]
    assert metrics["train_seconds"] < BUDGET
    assert parts <= metrics["wall_seconds"] + 0.5 and metrics["run_parts"] == 1
    # where it ended is measured by benchmarks/time_budget.py (no timed asserts in tests)
    assert (out / "checkpoints" / "best.weights.h5").exists()


def test_a_budget_spent_before_training_is_one_line_with_what_to_do(pairs_tsv, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(tsv_train(pairs_tsv, out, "--time-budget", "1s", "--jit-compile", "off")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("keras-transformer train: error: --time-budget 1s was used up before ")
    assert "setup took" in err and "rerun with --time-budget " in err and "--overwrite" in err
    assert not (out / "metrics.json").exists()
    # translate does not send the user back to a command that fails the same way
    assert main(["translate", str(out), "one"]) == 2
    err = capsys.readouterr().err.strip()
    assert "holds an unfinished training run" in err, err
    assert "with a larger --time-budget and --overwrite" in err, err
    assert "again to resume" not in err


def test_a_budget_that_ends_in_the_first_epoch_says_so_in_one_line(
    pairs_tsv, tmp_path, caplog, monkeypatch
):
    from keras_transformer.training.callbacks import TimeBudget

    # Training gets a hundredth of a second: the budget stops it after the first batch.
    monkeypatch.setattr(TimeBudget, "training_seconds", lambda self: 0.01)
    out = tmp_path / "run"
    assert main(tsv_train(pairs_tsv, out, "--time-budget", "10m", "--jit-compile", "off")) == 0
    warned = [r.getMessage() for r in caplog.records if "first epoch" in r.getMessage()]
    assert len(warned) == 1, warned
    assert warned[0].startswith("--time-budget 10m ended during the first epoch (1 of ")
    assert "barely trained" in warned[0] and "rerun with --time-budget " in warned[0]
    assert json.loads((out / "metrics.json").read_text())["stopped_by_time_budget"] is True


@pytest.mark.parametrize(
    "budget, message",
    [("ten minutes", "'ten minutes' is not a duration"), ("-5m", "must be more than 0 seconds")],
)
def test_a_bad_time_budget_is_one_line(capsys, tmp_path, budget, message):
    with pytest.raises(SystemExit) as exit_:  # refused while parsing, before TensorFlow loads
        main(["train", f"--time-budget={budget}", "--out", str(tmp_path / "r")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "--time-budget" in err and "\n" not in err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("patience", [None, 3])
def test_early_stopping_is_off_under_a_budget_and_on_without(pairs_tsv, tmp_path, patience):
    # A budget's schedule decays to the budget's end: a flat val_loss half-way is no reason to
    # stop (it ended a 30-minute run at 1,209 s with poor translations). Without a budget the
    # run stops after 4 epochs without a lower val_loss, or the patience given.
    import numpy as np

    from keras_transformer.training.config import TrainConfig
    from keras_transformer.training.fitting import fit_run

    budget = TrainConfig(task="tsv", data=str(pairs_tsv), time_budget="10m")
    assert budget.early_stopping_patience is None
    assert TrainConfig(task="tsv", data=str(pairs_tsv)).early_stopping_patience == 4
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    import tensorflow as tf

    ones = (np.ones((8, 3), "float32"), np.ones((8, 1), "float32"))
    batches = tf.data.Dataset.from_tensor_slices(ones).batch(4)
    seen = []
    fit = model.fit

    def spy(*args, callbacks=(), **kwargs):
        seen.extend(type(callback).__name__ for callback in callbacks)
        return fit(*args, callbacks=callbacks, **kwargs)

    model.fit = spy
    fit_run(
        model,
        batches,
        batches,
        run_dir=str(tmp_path),
        epochs=1,
        early_stopping_patience=patience,
        tensorboard=False,
        verbose=0,
    )
    assert "BestWeights" in seen
    assert ("EarlyStopping" in seen) == (patience is not None)
