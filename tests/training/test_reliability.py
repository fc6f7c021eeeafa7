"""Reliability: resume after SIGKILL, determinism, NaN handling, clear CLI errors, safety."""

import csv
import json
import os
import pathlib
import re
import signal
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_transformer
from keras_transformer.cli import main
from keras_transformer.training import fitting  # compile_model makes the optimizer
from tests.helpers import TINY_MODEL_ARGS
from tests.training.kill_at import __file__ as KILL_AT_SCRIPT

TINY = [
    "--num-train",
    "256",
    "--num-validation",
    "32",
    "--num-test",
    "16",
    *TINY_MODEL_ARGS,
    "--batch-size",
    "32",
    "--max-length",
    "24",
    "--warmup-steps",
    "10",
    "--vocab-size",
    "200",
]


def history(run_dir):
    with open(pathlib.Path(run_dir) / "history.csv", newline="") as handle:
        return list(csv.DictReader(handle))


EPOCHS = 3


@pytest.mark.parametrize(
    ("point", "rows_after_kill"),
    [
        ("mid_epoch:1", 1),  # after batch 1 of epoch 1
        ("after_checkpoint:1", 1),  # best checkpoint of epoch 1 saved, its history row not
        ("before_plots", EPOCHS),  # model.keras written, nothing after it
        ("before_metrics", EPOCHS),  # plots written, metrics.json not
    ],
)
def test_sigkill_at_a_named_point_then_same_command_resumes(tmp_path, point, rows_after_kill):
    """SIGKILL at a named point (`tests/training/kill_at.py` wraps it), then the same command.

    The kill is deterministic: `KERAS_TRANSFORMER_TEST_KILL_AT` names where the
    training process kills itself. After it the run is unfinished (no
    metrics.json); the same command (in this process) completes it, with every epoch logged
    once.
    """
    out = tmp_path / "run"
    command = [
        sys.executable,
        KILL_AT_SCRIPT,
        "train",
        *TINY,
        "--epochs",
        str(EPOCHS),
        "--out",
        str(out),
        "--jit-compile",
        "off",
    ]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    killed = subprocess.run(
        command,
        env={**env, "KERAS_TRANSFORMER_TEST_KILL_AT": point},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert len(history(out)) == rows_after_kill
    assert not (out / "metrics.json").exists()
    assert (out / "checkpoints" / "best.weights.h5").exists()
    if point == "before_metrics":
        assert any((out / "plots").glob("*.png"))
    metadata = out / "backup" / "training_metadata.json"
    backed_up = json.loads(metadata.read_text())["epoch"] if metadata.exists() else 0
    if point.startswith("mid_epoch"):
        assert backed_up == rows_after_kill  # the backup of epoch 0 is complete
    # The same command again, in this process: the kill needed a process of its own, the run
    # it resumes does not (a second TensorFlow start-up is no part of what is checked).
    assert main(command[2:]) == 0
    assert [int(r["epoch"]) for r in history(out)] == list(range(EPOCHS))
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epochs_run"] == EPOCHS  # the whole run, every process (state.json)
    assert not (out / "state.json").exists()  # a finished run keeps no resume state
    assert not (out / "backup").exists()  # BackupAndRestore cleans up after a finished run
    assert not list(out.rglob(".partial-*"))
    from keras_transformer.runs import run_files

    run_files(out)  # model.keras, config.json and vocabularies complete


def test_same_seed_same_history_and_metrics(tmp_path):
    runs = []
    for name, seed in (("a", "3"), ("b", "3"), ("c", "4")):
        assert (
            main(["train", *TINY, "--epochs", "2", "--seed", seed, "--out", str(tmp_path / name)])
            == 0
        )
        metrics = json.loads((tmp_path / name / "metrics.json").read_text())
        losses = [
            (r["loss"], r["val_loss"], r["masked_accuracy"]) for r in history(tmp_path / name)
        ]
        runs.append(
            (
                losses,
                {k: metrics[k] for k in ("test_token_accuracy", "test_loss", "test_exact_match")},
            )
        )
    assert runs[0] == runs[1]
    assert runs[0][0] != runs[2][0]


class _ExplodeAfter(keras.optimizers.schedules.LearningRateSchedule):
    """A normal learning rate, then an absurd one that drives the weights to inf/NaN."""

    def __init__(self, steps):
        self.steps = steps

    def __call__(self, step):
        return tf.where(step < self.steps, 1e-3, 1e30)

    def get_config(self):
        return {"steps": self.steps}


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    steps_per_epoch = 256 // 32
    explode = lambda *args, **kwargs: keras.optimizers.Adam(_ExplodeAfter(steps_per_epoch + 2))  # noqa: E731
    monkeypatch.setattr(fitting, "paper_adam", explode)  # the planned schedule's Adam
    out = tmp_path / "nan"
    assert main(["train", *TINY, "--epochs", "4", "--out", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["stopped_on_nan"] is True
    assert np.isfinite(metrics["test_loss"]) and metrics["epochs_run"] == 2
    assert (out / "checkpoints" / "best.weights.h5").exists()


def test_nan_before_any_checkpoint_is_a_clear_error(tmp_path, monkeypatch, capsys):
    explode = lambda *args, **kwargs: keras.optimizers.Adam(_ExplodeAfter(0))  # noqa: E731
    monkeypatch.setattr(fitting, "paper_adam", explode)
    assert main(["train", *TINY, "--epochs", "2", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "diverged (NaN loss)" in err[0] and "--warmup-steps" in err[0]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "--task", "tsv", "--data", "/no/such/file.tsv"], "/no/such/file.tsv"),
        (["train", "--task", "tsv"], "--data"),
        (
            ["train", "--d-model", "130", "--num-heads", "8"],
            "--d-model 130 is not divisible by --num-heads 8",
        ),
        (["train", "--dropout", "1.0"], "dropout"),
        (["train", "--num-layers", "0"], "--num-layers"),
        (["train", "--epochs", "0"], "epochs"),
        (["train", "--label-smoothing", "1.5"], "--label-smoothing"),
        (["train", "--strategy", "multiworker", "--out", "runs/not-there"], "TF_CONFIG"),
        (["translate", "/no/such/run", "hello"], "/no/such/run does not exist"),
        (
            ["translate", "/no/such/run", "--batch-size", "0", "hello"],
            "--batch-size must be a positive integer; received --batch-size=0",
        ),
        (["export", "/no/such/run", "--out", "/tmp/x"], "/no/such/run does not exist"),
    ],
)
def test_cli_errors_are_one_line(argv, message, capsys, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    try:
        code = main(argv)
    except SystemExit as exit_:  # a bad flag value is refused while parsing
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and err[0].startswith("keras-transformer")


def test_malformed_tsv_reports_line_numbers(tmp_path, capsys):
    path = tmp_path / "pairs.tsv"
    lines = [f"w{i} x{i}\tv{i} y{i}" for i in range(40)]
    lines[1], lines[3] = "no tab here", "\tonly target"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "r"
    assert main(["train", "--task", "tsv", "--data", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err
    assert (
        "2 malformed line(s): 2 (1 column), 4 (empty source)" in err and "--skip-malformed" in err
    )
    assert not out.exists()
    argv = [
        "train",
        "--task",
        "tsv",
        "--data",
        str(path),
        "--skip-malformed",
        "--epochs",
        "1",
        "--batch-size",
        "8",
        *TINY_MODEL_ARGS,
        "--max-length",
        "8",
        "--vocab-size",
        "100",
        "--out",
        str(out),
    ]
    with pytest.warns(UserWarning, match="skipped 2 malformed line"):
        assert main(argv) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["num_test"] > 0


def test_corrupted_model_file_is_a_clear_translate_error(tiny_run, tmp_path, capsys):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(tiny_run, broken)
    (broken / "model.keras").write_bytes(b"\x00garbage")
    assert main(["translate", str(broken), "one"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model.keras is damaged" in err[0]


UNSAFE = re.compile(
    r"\b(eval|exec)\(|\bpickle\b|keras\.layers\.Lambda|\bLambda\("
    r"|safe_mode\s*=\s*False|enable_unsafe_deserialization|allow_pickle\s*=\s*True"
)
"""Calls that run code from a file or turn off Keras's safe loading."""


def _unsafe_lines(root: pathlib.Path, patterns=("*.py",)) -> list[str]:
    return [
        f"{path.relative_to(root)}:{n}"
        for pattern in patterns
        for path in root.rglob(pattern)
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if UNSAFE.search(line) and not line.lstrip().startswith("#")
    ]


@pytest.mark.parametrize(
    "line",
    [
        "x = eval(text)",
        "keras.models.load_model(path, safe_mode=False)",
        "keras.config.enable_unsafe_deserialization()",
        "np.load(path, allow_pickle=True)",
        "keras.layers.Lambda(lambda x: x)",
    ],
)
def test_the_unsafe_call_scan_catches(tmp_path, line):
    (tmp_path / "module.py").write_text(f"import keras\n{line}\n")
    assert _unsafe_lines(tmp_path) == ["module.py:2"]


def test_no_eval_exec_pickle_or_lambda_layers_in_the_package():
    package = pathlib.Path(keras_transformer.__file__).parent
    assert _unsafe_lines(package) == []
    root = package.parent  # the tutorials and benchmarks users copy from
    for folder, patterns in (("tutorials", ("*.ipynb",)), ("benchmarks", ("*.py",))):
        if (root / folder).is_dir():
            assert _unsafe_lines(root / folder, patterns) == [], folder
