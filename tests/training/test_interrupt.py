"""Ctrl-C and SIGTERM during `keras-transformer train`: one line, 130 / 143, and the same
command resumes to a finished run that counts the whole run; resuming with other settings."""

import json
import os
import signal
import subprocess
import sys

import pytest

from keras_transformer import cli
from keras_transformer.training import rundir
from keras_transformer.training.config import TrainConfig
from tests.helpers import TINY_MODEL_ARGS

EPOCHS = 3
TINY = [
    "--num-train",
    "200",
    "--num-validation",
    "32",
    "--num-test",
    "16",
    "--epochs",
    str(EPOCHS),
    *TINY_MODEL_ARGS,
    "--batch-size",
    "32",
    "--max-length",
    "48",
    "--vocab-size",
    "200",
    "--jit-compile",
    "off",
]
TIMEOUT = 600


def _command(out) -> list[str]:
    return [sys.executable, "-m", "keras_transformer", "train", *TINY, "--out", str(out)]


def _env(**extra) -> dict[str, str]:
    """A user's environment (no TF_CPP_MIN_LOG_LEVEL: the command line sets it) with `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERAS_TRANSFORMER_TEST")}
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    return {**env, **extra}


def _stderr_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _resume_to_the_end(out, seconds_before: float) -> dict:
    finished = subprocess.run(
        _command(out), env=_env(), capture_output=True, text=True, timeout=TIMEOUT
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epochs_run"] == EPOCHS  # the whole run, not the last process's part
    assert metrics["train_seconds"] >= round(seconds_before, 2)  # the earlier seconds count
    assert not (out / "state.json").exists() and not (out / "backup").exists()
    return metrics


def test_ctrl_c_after_the_first_epoch_then_the_same_command_finishes(tmp_path):
    out = tmp_path / "run"
    process = subprocess.Popen(
        _command(out), env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        for line in process.stdout:  # Keras prints "Epoch 2/3" once epoch 1 is done
            if line.startswith("Epoch 2/"):
                process.send_signal(signal.SIGINT)
                break
        _, err = process.communicate(timeout=TIMEOUT)
    finally:
        process.kill()
    assert process.returncode == cli.EXIT_INTERRUPTED, err[-3000:]
    lines = _stderr_lines(err)
    assert len(lines) <= 2 and "Traceback" not in err, err
    assert lines[-1].startswith("keras-transformer train: interrupted during epoch 2 of 3; ")
    assert "run the same command to resume" in lines[-1]
    state = json.loads((out / "state.json").read_text())
    assert state["epochs_run"] == 1 and state["train_seconds"] > 0
    assert json.loads((out / "backup" / "training_metadata.json").read_text())["epoch"] == 1
    metrics = _resume_to_the_end(out, state["train_seconds"])
    assert metrics["train_seconds"] > state["train_seconds"] + 0.5  # two more epochs' worth


@pytest.mark.parametrize(
    ("point", "signal_name", "status"),
    [
        ("loading_data", "INT", cli.EXIT_INTERRUPTED),  # before any file
        ("building_model", "TERM", cli.EXIT_TERMINATED),  # vocabularies written, no config.json
        ("before_plots", "INT", cli.EXIT_INTERRUPTED),  # fit done, model.keras written
    ],
)
def test_a_signal_at_any_stage_is_one_line_and_the_run_resumes(
    tmp_path, point, signal_name, status
):
    out = tmp_path / "run"
    env = _env(KERAS_TRANSFORMER_TEST_KILL_AT=point, KERAS_TRANSFORMER_TEST_KILL_SIGNAL=signal_name)
    stopped = subprocess.run(
        _command(out), env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert stopped.returncode == status, stopped.stderr[-3000:]
    lines = _stderr_lines(stopped.stderr)
    assert len(lines) <= 2 and "Traceback" not in stopped.stderr, stopped.stderr
    word = "terminated" if signal_name == "TERM" else "interrupted"
    assert lines[-1].startswith(f"keras-transformer train: {word} while ")
    assert not (out / "metrics.json").exists()
    seconds = (
        json.loads((out / "state.json").read_text()).get("train_seconds", 0.0)
        if (out / "state.json").exists()
        else 0.0
    )
    metrics = _resume_to_the_end(out, seconds)
    if point == "before_plots":  # the fit was done: the rerun evaluates, it does not train again
        assert metrics["train_seconds"] == pytest.approx(seconds, abs=0.01)


def _unfinished_run(out, **settings) -> TrainConfig:
    """A run directory as an interruption leaves it: config.json and state.json, no metrics."""
    config = TrainConfig(out=str(out), **settings)
    out.mkdir(parents=True)
    rundir.update_state(str(out), settings=rundir.requested_settings(config), epochs_run=1)
    (out / "config.json").write_text(json.dumps({"d_model": 16, "architecture": "encoder-decoder"}))
    (out / "backup").mkdir()
    return config


def _tiny_settings() -> dict:
    flags = dict(zip(TINY[::2], TINY[1::2], strict=True))
    return {
        k.lstrip("-").replace("-", "_"): (v if k == "--jit-compile" else int(v))
        for k, v in flags.items()
    }


def test_changed_settings_are_refused_before_anything_is_written(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    _unfinished_run(out, **_tiny_settings())
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}

    def no_data(*args, **kwargs):
        raise AssertionError("the data was loaded before the settings were checked")

    monkeypatch.setattr("keras_transformer.data.load_task", no_data)
    argv = ["train", *TINY, "--out", str(out), "--d-model", "64", "--dropout", "0.2"]
    assert cli.main(argv) == cli.EXIT_USER_ERROR
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "unfinished run" in err and "--d-model 16 -> 64" in err and "--dropout 0.0 -> 0.2" in err
    assert "--overwrite" in err and "old settings" in err
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before
    monkeypatch.undo()
    assert cli.main([*argv, "--overwrite"]) == cli.EXIT_OK  # --overwrite starts it again
    config = json.loads((out / "config.json").read_text())
    metrics = json.loads((out / "metrics.json").read_text())
    assert config["d_model"] == 64 and metrics["epochs_run"] == EPOCHS
    assert not (out / "backup").exists() and not (out / "state.json").exists()


def test_the_same_settings_are_no_change(tmp_path):
    out = tmp_path / "run"
    config = _unfinished_run(out, **_tiny_settings())
    assert rundir.changed_settings(config, str(out)) == {}
    rundir.check_run_dir(config, str(out))  # resumable: no error


@pytest.mark.parametrize("command", ["translate", "export"])
def test_translate_and_export_name_an_unfinished_run(tmp_path, capsys, command):
    out = tmp_path / "run"
    _unfinished_run(out, **_tiny_settings())
    argv = (
        [command, str(out), "one"]
        if command == "translate"
        else [command, str(out), "--out", str(tmp_path / "x")]
    )
    assert cli.main(argv) == cli.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "unfinished training run" in err and "same `keras-transformer train` command" in err
    assert "missing model.keras" not in err


def test_an_out_that_is_a_file_is_refused_before_the_data(tmp_path, monkeypatch, capsys):
    path = tmp_path / "file.txt"
    path.write_text("x")

    def no_data(*args, **kwargs):
        raise AssertionError("the data was loaded before --out was checked")

    monkeypatch.setattr("keras_transformer.data.load_task", no_data)
    assert cli.main(["train", *TINY, "--out", str(path)]) == cli.EXIT_USER_ERROR
    assert f"--out {path} is a file" in capsys.readouterr().err


def test_pretrain_interrupted_mid_epoch_resumes_to_the_whole_run(tmp_path):
    out = tmp_path / "mlm"
    command = [
        sys.executable,
        "-m",
        "keras_transformer",
        "pretrain",
        "--num-sentences",
        "300",
        "--epochs",
        "2",
        "--finetune-task",
        "none",
        *TINY_MODEL_ARGS,
        "--vocab-size",
        "200",
        "--out",
        str(out),
    ]
    env = _env(
        KERAS_TRANSFORMER_TEST_KILL_AT="mid_epoch:1", KERAS_TRANSFORMER_TEST_KILL_SIGNAL="INT"
    )
    stopped = subprocess.run(command, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert stopped.returncode == cli.EXIT_INTERRUPTED, stopped.stderr[-3000:]
    lines = _stderr_lines(stopped.stderr)
    assert len(lines) <= 2 and lines[-1].startswith(
        "keras-transformer pretrain: interrupted during epoch 2 of 2; run the same command"
    ), stopped.stderr
    finished = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert finished.returncode == 0, finished.stderr[-3000:]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epochs_run"] == 2 and not (out / "state.json").exists()
