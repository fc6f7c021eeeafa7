"""`train --task tsv` sizes itself from the data; `--time-budget` ends training on time."""

import json

import keras
import pytest

from keras_transformer.cli import main
from keras_transformer.data import load_task
from keras_transformer.training.schedule import BudgetSchedule


@pytest.fixture(scope="module")
def pairs_tsv(tmp_path_factory):
    """Sentence-like pairs (English number words -> French), as a user's TSV."""
    task = load_task("numbers", source_lang="en", target_lang="fr", num_train=600, seed=3)
    path = tmp_path_factory.mktemp("tsv") / "pairs.tsv"
    path.write_text("".join(f"{s}\t{t}\n" for s, t in task.train), encoding="utf-8")
    return path


def run_files(run_dir):
    config = json.loads((run_dir / "config.json").read_text())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    return config, metrics


def test_sizes_left_out_come_from_the_data_and_given_ones_win(pairs_tsv, tmp_path):
    out = tmp_path / "run"
    argv = [
        "train",
        "--task",
        "tsv",
        "--data",
        str(pairs_tsv),
        "--out",
        str(out),
        "--d-model",
        "32",
        "--num-heads",
        "2",
        "--dff",
        "64",
        "--num-layers",
        "1",
        "--epochs",
        "2",
        "--jit-compile",
        "off",
    ]
    assert main(argv) == 0
    config, metrics = run_files(out)
    chosen = config["sized_from_data"]
    assert set(chosen) == {"vocab_size", "max_length"}  # the rest was given
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
    argv = [
        "train",
        "--task",
        "tsv",
        "--data",
        str(pairs_tsv),
        "--out",
        str(out),
        "--time-budget",
        "8s",
        "--jit-compile",
        "off",
        "--batch-size",
        "16",
    ]
    with caplog.at_level("INFO", logger="keras_transformer.progress"):
        assert main(argv) == 0
    config, metrics = run_files(out)
    # the budget, not an epoch cap of 1000, is what the run was asked to do
    assert config["time_budget"] == 8.0 and config["epochs"] is None
    assert "epochs" not in config["sized_from_data"]
    assert "Epoch 1/" not in capsys.readouterr().out  # time, not epochs, is reported
    progress = [r.getMessage() for r in caplog.records if r.name == "keras_transformer.progress"]
    assert len(progress) == metrics["epochs_run"]
    assert progress[0].startswith("epoch 1: ") and " of 8 s (" in progress[0]
    assert set(config["sized_from_data"]) >= {"num_layers", "d_model", "vocab_size"}
    assert metrics["time_budget_seconds"] == 8.0
    assert metrics["stopped_by_time_budget"] is True
    assert metrics["train_seconds"] >= 8.0  # it ran until the budget, not shorter
    assert metrics["epochs_run"] < 1000
    assert (out / "checkpoints" / "best.weights.h5").exists()


def test_a_bad_time_budget_is_one_line(capsys, tmp_path):
    assert main(["train", "--time-budget", "ten minutes", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert "time budget 'ten minutes' is not a duration" in err and "\n" not in err
    assert not (tmp_path / "r").exists()
