"""`train --init-from RUN_DIR` continues a translation run (issue 26 item 4)."""

import json

import pytest

from keras_transformer.cli import main
from keras_transformer.plots import read_history
from tests.helpers import SMALL_MODEL_ARGS

TINY = [
    "--task",
    "numbers",
    "--num-train",
    "512",
    "--num-validation",
    "64",
    "--num-test",
    "16",
    *SMALL_MODEL_ARGS,
    "--batch-size",
    "32",
    "--jit-compile",
    "off",
]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "first"
    assert main(["train", *TINY, "--epochs", "3", "--out", str(out)]) == 0
    return out


def test_a_continued_run_starts_from_the_old_weights(first_run, tmp_path):
    out = tmp_path / "continued"
    assert (
        main(
            [
                "train",
                *TINY[:8],
                "--epochs",
                "1",
                "--init-from",
                str(first_run),
                "--out",
                str(out),
                "--jit-compile",
                "off",
                "--batch-size",
                "32",
            ]
        )
        == 0
    )
    old = read_history(str(first_run / "history.csv"))["loss"]
    new = read_history(str(out / "history.csv"))["loss"]
    # a fresh run's first epoch (the old run's, same seed) is far above where it ended
    assert old[0] - old[-1] > 0.5
    assert new[0] < old[-1] + 0.25 * (old[0] - old[-1]), (old, new)
    config = json.loads((out / "config.json").read_text())
    assert config["init_from"]["path"] == str(first_run.resolve())
    assert len(config["init_from"]["config_sha256"]) == 64
    assert "test_bleu" in config["init_from"]["metrics"]
    assert (config["d_model"], config["num_layers"], config["dff"]) == (32, 1, 64)  # the run's
    old_vocab = (first_run / "tokenizers" / "source" / "vocab.txt").read_text()
    assert (out / "tokenizers" / "source" / "vocab.txt").read_text() == old_vocab


def test_fresh_weights_take_the_runs_vocabulary_and_sizes_not_its_weights(first_run, tmp_path):
    """`--fresh-weights`: the old run's tokenizers and sizes, new random weights. With the same
    seed and data the first epoch is the old run's first, not a continuation of its last."""
    out = tmp_path / "fresh"
    argv = ["train", *TINY, "--epochs", "1", "--init-from", str(first_run), "--out", str(out)]
    assert main([*argv, "--fresh-weights"]) == 0
    old = read_history(str(first_run / "history.csv"))["loss"]
    new = read_history(str(out / "history.csv"))["loss"]
    assert abs(new[0] - old[0]) < 0.05 * (old[0] - old[-1]), (old, new)
    config = json.loads((out / "config.json").read_text())
    assert config["fresh_weights"] is True
    assert (config["d_model"], config["num_layers"], config["dff"]) == (32, 1, 64)  # the run's
    old_vocab = (first_run / "tokenizers" / "target" / "vocab.txt").read_text()
    assert (out / "tokenizers" / "target" / "vocab.txt").read_text() == old_vocab


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--d-model", "64"], "--d-model 64 does not fit --init-from"),
        (["--architecture", "decoder-only"], "is an encoder-decoder run; it cannot start"),
    ],
)
def test_a_run_that_does_not_fit_is_refused_in_one_line(
    first_run, tmp_path, capsys, extra, message
):
    out = tmp_path / "refused"
    argv = ["train", "--task", "numbers", "--init-from", str(first_run), "--out", str(out), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert not out.exists()
