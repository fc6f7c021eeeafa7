"""Ctrl-C and SIGTERM during `keras-transformer train`: one line, 130 / 143, and the same
command resumes to a finished run that counts the whole run; resuming with other settings."""

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

import pytest

from keras_transformer import cli
from keras_transformer.runs import RunDirectory, requested_settings
from keras_transformer.training.config import TrainConfig
from tests.helpers import TINY_MODEL_ARGS
from tests.training.kill_at import __file__ as KILL_AT_SCRIPT

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
    return [sys.executable, KILL_AT_SCRIPT, "train", *TINY, "--out", str(out)]


def _env(**extra) -> dict[str, str]:
    """A user's environment (no TF_CPP_MIN_LOG_LEVEL: the command line sets it) with `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERAS_TRANSFORMER_TEST")}
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    return {**env, **extra}


PROGRESS = (
    "train: starting",
    "pretrain: starting",
    "loading the data",
    "learning the vocabularies",
    "timing the evaluation",
    "model: ",
    "training done",
)
"""The progress lines a default run writes around its epochs (`cli`, `training.run`)."""


def _stderr_lines(text: str) -> list[str]:
    """The lines of stderr other than the default progress lines before training."""
    return [line for line in text.splitlines() if line.strip() and not line.startswith(PROGRESS)]


def _resume_to_the_end(out, seconds_before: float) -> dict:
    """The same command again, in this process (no second TensorFlow start-up): what is tested
    is the run it finishes, not the program's start."""
    assert cli.main(["train", *TINY, "--out", str(out)]) == cli.EXIT_OK
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
    RunDirectory(str(out)).update_state(settings=requested_settings(config), epochs_run=1)
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
    assert RunDirectory(str(out)).changed_settings(config) == {}
    RunDirectory(str(out)).check_writable(config)  # resumable: no error


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
        KILL_AT_SCRIPT,
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
    assert cli.main(command[2:]) == cli.EXIT_OK  # the same command, in this process
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epochs_run"] == 2 and not (out / "state.json").exists()


def _interrupt_mid_epoch_2(command: list[str]) -> subprocess.CompletedProcess:
    env = _env(
        KERAS_TRANSFORMER_TEST_KILL_AT="mid_epoch:1", KERAS_TRANSFORMER_TEST_KILL_SIGNAL="INT"
    )
    stopped = subprocess.run(command, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert stopped.returncode == cli.EXIT_INTERRUPTED, stopped.stderr[-3000:]
    return stopped


@pytest.fixture(scope="module")
def interrupted_overwrite(tmp_path_factory):
    """`--overwrite` on a finished run, interrupted in epoch 2: the run directory, a copy of it
    made at once (an unfinished run with the same settings, for the test that resumes it with
    `--overwrite`), and the stderr of the interruption. One interrupted run for two tests."""
    root = tmp_path_factory.mktemp("interrupted_overwrite")
    out = root / "run"
    out.mkdir()
    (out / "metrics.json").write_text("{}")  # a finished run that --overwrite replaces
    stopped = _interrupt_mid_epoch_2([*_command(out), "--overwrite"])
    shutil.copytree(out, root / "copy")
    return out, root / "copy", stopped.stderr


def test_an_interrupted_overwrite_run_prints_a_hint_that_resumes_it(interrupted_overwrite):
    out, _, stderr = interrupted_overwrite
    hint = _stderr_lines(stderr)[-1]
    assert "resume with: keras-transformer train " in hint, hint
    command = hint.split("resume with: ", 1)[1].split(" (its progress", 1)[0]
    assert "--overwrite" not in command
    argv = shlex.split(command)
    assert argv[:2] == ["keras-transformer", "train"] and argv[2:] == [*TINY, "--out", str(out)]
    state = json.loads((out / "state.json").read_text())
    assert state["epochs_run"] == 1
    # The hint, run as printed, resumes: epoch 2 on, and the earlier seconds count.
    metrics = _resume_to_the_end(out, state["train_seconds"])
    assert metrics["run_parts"] == 2


def test_overwrite_on_an_unfinished_run_with_the_same_settings_resumes_it(interrupted_overwrite):
    # An unfinished run (its interruption's "run the same command to resume" line is checked by
    # test_ctrl_c_after_the_first_epoch_then_the_same_command_finishes).
    out = interrupted_overwrite[1]
    before = json.loads((out / "state.json").read_text())
    assert before["epochs_run"] == 1 and not (out / "metrics.json").exists()
    again = subprocess.run(
        [*_command(out), "--overwrite"], env=_env(), capture_output=True, text=True, timeout=TIMEOUT
    )
    assert again.returncode == 0, again.stderr[-3000:]
    # Quiet (no -v), yet it says that it resumed, and that --overwrite did not start it again.
    resumed = [line for line in _stderr_lines(again.stderr) if line.startswith("resuming ")]
    assert len(resumed) == 1, again.stderr
    assert f"resuming the unfinished run in {out} after epoch 1" in resumed[0]
    assert "--overwrite replaces a finished run or one started with other settings" in resumed[0]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epochs_run"] == EPOCHS and metrics["run_parts"] == 2
    assert metrics["train_seconds"] >= before["train_seconds"]


def test_overwrite_clears_a_finished_run_or_other_settings_and_resumes_the_same(tmp_path):
    same = _unfinished_run(tmp_path / "same", **_tiny_settings())
    overwrite = TrainConfig(out=str(tmp_path / "same"), overwrite=True, **_tiny_settings())
    assert not RunDirectory(same.out).overwrites(overwrite)  # unfinished, same settings: resumed
    other = TrainConfig(out=same.out, overwrite=True, **{**_tiny_settings(), "d_model": 32})
    assert RunDirectory(same.out).overwrites(other)  # other settings: started again
    (tmp_path / "same" / "metrics.json").write_text("{}")
    assert RunDirectory(same.out).overwrites(overwrite)  # a finished run: replaced
    assert not RunDirectory(same.out).overwrites(same)  # no --overwrite: nothing is cleared


def test_data_paths_compare_as_resolved_paths_on_resume(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "pairs.txt").write_text("one\tun\n")
    sizes = {k: v for k, v in _tiny_settings().items() if not k.startswith("num_")}
    config = _unfinished_run(tmp_path / "run", task="tsv", data="data/pairs.txt", **sizes)
    for spelling in ("./data/pairs.txt", str(tmp_path / "data" / "pairs.txt"), "data//pairs.txt"):
        again = TrainConfig(out=config.out, task="tsv", data=spelling, **sizes)
        assert RunDirectory(config.out).changed_settings(again) == {}, spelling
        RunDirectory(config.out).check_writable(again)  # resumable: no error
    elsewhere = tmp_path / "other.txt"
    elsewhere.write_text("two\tdeux\n")
    moved = TrainConfig(out=config.out, task="tsv", data=str(elsewhere), **sizes)
    assert set(RunDirectory(config.out).changed_settings(moved)) == {"data"}
    # An older run recorded the text as typed; it is resolved when compared too.
    RunDirectory(config.out).update_state(
        settings={**requested_settings(config), "data": "./data/pairs.txt"}
    )
    assert RunDirectory(config.out).changed_settings(config) == {}


def test_a_resumed_budget_run_gets_what_is_left_and_counts_every_part(tmp_path):
    out = tmp_path / "run"
    budget = 240  # the first part ends in epoch 2: after 20-30 s, 71 s on a loaded 2-core CPU
    # --epochs 3 ends the second part after epoch 3 instead of waiting the budget out (a minute
    # of training that no check below needs): the budget still counts, reports and plans both
    # parts; that the budget ends a run is test_time_budget.py's.
    command = [*_command(out), "--time-budget", f"{budget}s"]
    start = time.time()
    _interrupt_mid_epoch_2(command)
    first = time.time() - start
    state = json.loads((out / "state.json").read_text())
    assert 0 < state["wall_seconds"] <= first  # this part's seconds, counted from its start
    start = time.time()
    finished = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=TIMEOUT)
    second = time.time() - start
    assert finished.returncode == 0, finished.stderr[-3000:]
    lines = _stderr_lines(finished.stderr)
    resumed = [line for line in lines if line.startswith("resuming ")]
    assert len(resumed) == 1 and "after epoch 1; " in resumed[0], finished.stderr
    assert f"of the {budget} s budget, the earlier part(s) used " in resumed[0]
    assert "this one's setup " in resumed[0] and " s are left" in resumed[0]
    epoch_lines = [line for line in lines if line.startswith("epoch ")]
    assert epoch_lines[0].startswith("epoch 2: ")  # the resumed run goes on from epoch 2
    used_at_epoch_2 = float(epoch_lines[0].split(": ", 1)[1].split(" s of", 1)[0])
    assert used_at_epoch_2 >= state["wall_seconds"] - 1  # the first part's time counts
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["run_parts"] == 2
    # Both parts count (less each process's exit, after metrics.json is written).
    assert second + 0.5 * first <= metrics["wall_seconds"] <= first + second
    assert metrics["train_seconds"] >= state["train_seconds"]


def test_a_write_that_fails_leaves_the_old_file_whole(tmp_path):
    """`RunDirectory.write_json` writes a partial file and renames it: a write stopped halfway
    (here, a value JSON cannot hold) leaves the earlier `metrics.json` as it was."""
    run = RunDirectory(str(tmp_path))
    run.write_json("metrics.json", {"test_accuracy": 0.5})
    with pytest.raises(TypeError):
        run.write_json("metrics.json", {"test_accuracy": 0.9, "fine_tuning": object()})
    assert run.read_json("metrics.json") == {"test_accuracy": 0.5}
    assert sorted(os.listdir(tmp_path)) == ["metrics.json"]  # no partial file left behind
    run.update_state(epochs_run=2)  # state.json through the same writer
    assert run.state() == {"epochs_run": 2}
