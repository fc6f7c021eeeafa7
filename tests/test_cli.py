"""The command line as a user meets it: a real process, its stderr and exit status.

Pytest hides logging and TensorFlow's C++ logs of in-process calls, so the
one-line-error promise is checked on `python -m keras_transformer` in a
subprocess, with the environment of a user (no TF_CPP_MIN_LOG_LEVEL set).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from keras_transformer import __version__, cli

TIMEOUT = 240


def _env(**extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL",)}
    env.pop("KERAS_TRANSFORMER_TRACEBACK", None)
    return {**env, **extra}


def _run(*argv, stdin: bytes | None = None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "keras_transformer", *map(str, argv)],
        input=stdin,
        capture_output=True,
        env=env or _env(),
        timeout=TIMEOUT,
    )


# The progress lines a command prints before its work fails (shown by default, on stderr).
PROGRESS_LINES = re.compile(r"^(\w+: starting \(TensorFlow|loading the data \(--task )")


def _one_error_line(result: subprocess.CompletedProcess, command: str, *needles: str) -> str:
    err = result.stderr.decode()
    lines = [line for line in err.splitlines() if line.strip() and not PROGRESS_LINES.match(line)]
    assert result.returncode == cli.EXIT_USER_ERROR, err
    assert len(lines) == 1 and "Traceback" not in err, err
    prefix = f"keras-transformer {command}" if command else "keras-transformer"
    assert lines[0].startswith(f"{prefix}: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture()
def run_copy(tiny_run, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(tiny_run, copy)
    return copy


def test_version_and_module_entry_point():
    result = _run("--version")
    assert result.returncode == 0 and result.stdout.decode().strip() == (
        f"keras-transformer {__version__}"
    )


def test_help_of_every_command_imports_no_tensorflow():
    code = textwrap.dedent(
        """
        import sys
        from keras_transformer import cli
        for argv in (["--help"], *([name, "--help"] for name in cli.COMMANDS)):
            try:
                cli.main(argv)
            except SystemExit as exit_:
                assert exit_.code == 0, argv
        assert "tensorflow" not in sys.modules, "--help imported tensorflow"
        print("checked", file=sys.stderr)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=_env(), timeout=TIMEOUT
    )
    assert result.returncode == 0 and "checked" in result.stderr.decode(), result.stderr.decode()
    out = result.stdout.decode()
    assert out.count("exit status: 0 success") == 1  # once, under the main help
    assert out.count("reader closes the pipe") == 1  # only under translate


@pytest.mark.parametrize(
    "argv, command, needles",
    [
        (["translate", "RUN", "one", "--beam-size", "2", "--alpha", "nan"], "translate", ["nan"]),
        (["export", "RUN", "--out", "x", "--alpha", "inf"], "export", ["--alpha"]),
        (["train", "--dropout", "nan"], "train", ["--dropout"]),
        (["train", "--label-smoothing", "1.5"], "train", ["--label-smoothing", "1.5"]),
        (["pretrain", "--mask-rate", "0"], "pretrain", ["--mask-rate"]),
        (["translate", "RUN", "--jit-compile", "maybe"], "translate", ["auto", "on", "off"]),
        (["train", "--no-such-flag"], "", ["--no-such-flag"]),  # argparse: top level
        # a negative duration, apart or joined: one message naming the flag and a valid form
        (["train", "--time-budget", "-5m"], "train", ["--time-budget", "'-5m'", "10m"]),
        (["train", "--time-budget=-5m"], "train", ["--time-budget", "'-5m'", "10m"]),
        (["train", "--time-budget", "soon"], "train", ["--time-budget", "'soon'", "1.5h"]),
        # the flag, as translate names it, not the Python name batch_size
        (["train", "--batch-size", "0"], "train", ["--batch-size", "integer >= 1"]),
        (["pretrain", "--d-model", "-8"], "pretrain", ["--d-model", "integer >= 1"]),
        (["train", "--max-length", "3"], "train", ["--max-length", "integer >= 4"]),
    ],
)
def test_bad_flags_are_one_line_without_loading_anything(argv, command, needles):
    _one_error_line(_run(*argv), command, *needles)


def test_missing_run_directory_is_one_line(tmp_path):
    line = _one_error_line(_run("translate", tmp_path / "nowhere", "one"), "translate", "nowhere")
    assert "does not exist" in line and "not a run directory" not in line


def test_config_that_is_not_an_object_is_damaged(run_copy):
    (run_copy / "config.json").write_text("[]")
    line = _one_error_line(_run("translate", run_copy, "one"), "translate", "config.json")
    assert "is damaged" in line and "list" in line


def test_truncated_model_is_damaged_not_missing(run_copy, tmp_path):
    model = run_copy / "model.keras"
    model.write_bytes(model.read_bytes()[: model.stat().st_size // 2])
    line = _one_error_line(
        _run("export", run_copy, "--out", tmp_path / "exported"), "export", "model.keras"
    )
    assert "is damaged" in line and "not found" not in line.lower()
    assert not (tmp_path / "exported").exists()


def test_invalid_utf8_names_the_line(tiny_run):
    result = _run("translate", tiny_run, stdin=b"one two\nthree\n\xff\xfe four\n")
    _one_error_line(result, "translate", "line 3", "UTF-8")


def test_translate_streams_and_ends_quietly_when_the_reader_leaves(tiny_run):
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "keras_transformer",
            "translate",
            str(tiny_run),
            "--batch-size",
            "4",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    try:
        process.stdin.write(b"one two\nfour five\n" * 2)  # one full batch, input still open
        process.stdin.flush()
        first = process.stdout.readline()  # arrives before stdin ends: the batch was flushed
        process.stdout.close()  # the reader leaves (`| head -1`)
        process.stdin.write(b"six seven\n" * 400)
        process.stdin.close()
        err = process.stderr.read().decode()
        assert process.wait(timeout=TIMEOUT) == 0, err
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert first.endswith(b"\n")
    assert err.strip() == "", err


def test_missing_tensorflow_datasets_names_the_extra(tmp_path):
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "tensorflow_datasets.py").write_text("raise ImportError('not installed')\n")
    path = os.pathsep.join([str(shadow), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    result = _run(
        "train", "--task", "ted_hrlr_pt_en", "--out", tmp_path / "run", env=_env(PYTHONPATH=path)
    )
    _one_error_line(result, "train", 'pip install "keras_transformer[ted]"')


@pytest.mark.parametrize("kind", [TypeError, AttributeError, KeyError, ValueError])
def test_an_internal_bug_is_not_disguised_as_a_user_error(monkeypatch, capsys, kind):
    def broken(args):
        raise kind("a bug")

    monkeypatch.setattr("keras_transformer.commands.export.run", broken)
    assert cli.main(["export", "RUN", "--out", "x"]) == cli.EXIT_INTERNAL_ERROR
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error" in err and "please report" in err


def test_a_value_error_inside_a_run_is_reported_as_a_bug(monkeypatch, capsys, tmp_path):
    """A ValueError raised by the package's own code mid-run (here the recipe's model builder,
    reached through a real `train` run) is a bug: a traceback and exit 3, not a usage line."""

    def broken_builder(*args, **kwargs):
        raise ValueError("an internal shape mismatch")

    monkeypatch.setattr("keras_transformer.models.build_transformer", broken_builder)
    argv = ["train", "--num-train", "64", "--num-validation", "8", "--num-test", "8"]
    argv += ["--epochs", "1", "--batch-size", "16", *"--d-model 8 --num-heads 2 --dff 8".split()]
    assert cli.main([*argv, "--num-layers", "1", "--out", str(tmp_path / "run")]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error (ValueError)" in err, err
    assert "error: an internal shape mismatch" not in err


def test_user_error_type_is_one_line(monkeypatch, capsys):
    from keras_transformer.errors import UserInputError

    def bad(args):
        raise UserInputError("--thing 3 is wrong; use 2.")

    monkeypatch.setattr("keras_transformer.commands.export.run", bad)
    assert cli.main(["export", "RUN", "--out", "x"]) == cli.EXIT_USER_ERROR
    assert (
        capsys.readouterr().err == "keras-transformer export: error: --thing 3 is wrong; use 2.\n"
    )


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["benchmark", "--size", "tiny", "--json", "{empty}"], "is a directory; pass a file name"),
        (["exercises", "--tutorials", "{empty}", "--out", "{out}"], "has a cell tagged 'exercise'"),
    ],
)
def test_commands_report_bad_input_as_the_packages_user_error(
    argv, needle, monkeypatch, capsys, tmp_path
):
    """Only `UserInputError` (and OSError) count as the user's: a command that raised a plain
    ValueError for bad input would be reported as an internal error (exit 3)."""
    argv = [a.format(empty=tmp_path, out=tmp_path / "out") for a in argv]
    assert cli.main(argv) == cli.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and needle in err, err


def test_a_benchmark_count_below_one_is_refused_while_parsing(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["benchmark", "--size", "tiny", "--steps", "0"])
    assert exit_.value.code == 2
    assert "argument --steps: 0 is less than 1" in capsys.readouterr().err


def test_verbose_raises_the_package_log_level():
    import logging

    cli._configure_logging(0)
    assert logging.getLogger("keras_transformer").level == logging.WARNING
    cli._configure_logging(1)
    assert logging.getLogger("keras_transformer").level == logging.INFO
    cli._configure_logging(0)


def test_a_bare_command_prints_the_help_with_every_command(capsys):
    assert cli.main([]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("usage: keras-transformer")
    for name in cli.COMMANDS:
        assert f"\n    {name} " in out, name
    assert "130 interrupted" in out and "143 terminated" in out


def _commands() -> dict:
    from keras_transformer.commands._arguments import help_text

    parser = cli.build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return {"": (parser, help_text), **{n: (p, help_text) for n, p in sub.choices.items()}}


@pytest.mark.parametrize("name", ["", *cli.COMMANDS])
def test_every_option_has_help_and_a_default(name):
    parser, help_text = _commands()[name]
    for action in parser._actions:
        if action.dest == "command":  # the list of commands: each has its own help line
            assert all(choice.help for choice in action._choices_actions)
            continue
        text = help_text(action)
        assert text and text.strip(), (name, action.option_strings)
        if action.option_strings and action.nargs != 0 and not action.required:
            if "version" not in action.dest and action.dest != "help":
                assert "default" in text, (name, action.option_strings, text)
    parser.format_help()  # every help string formats (no stray %)


def test_train_defaults_are_read_from_the_config_classes(monkeypatch):
    from keras_transformer.training import config as train_config

    parser, help_text = _commands()["train"]
    options = {a.dest: a for a in parser._actions}
    assert "(default: 64)" in help_text(options["batch_size"])
    assert "TransformerConfig: 128" in help_text(options["d_model"])
    assert "chosen from the data" in help_text(options["d_model"])
    monkeypatch.setitem(train_config.FIXED_SIZES, "d_model", 96)  # a changed default is shown
    monkeypatch.setattr(train_config.TrainConfig.__dataclass_fields__["batch_size"], "default", 8)
    assert "(default: 8)" in help_text(options["batch_size"])
    assert "96" in help_text(options["d_model"])


def test_train_description_says_what_each_architecture_does():
    parser, _ = _commands()["train"]
    text = parser.format_help()
    for words in (
        "encoder-decoder  translation",
        "encoder          classification",
        "decoder-only",
        "dual-encoder     sentence vectors",
    ):
        assert words in text, words
    assert "Train a translator" not in text


def test_verbose_works_after_the_command(monkeypatch):
    seen = {}
    monkeypatch.setattr(cli, "_configure_logging", lambda verbose: seen.setdefault("v", verbose))
    monkeypatch.setattr("keras_transformer.commands.export.run", lambda args: 0)
    assert cli.main(["export", "RUN", "--out", "x", "-vv"]) == 0 and seen["v"] == 2
    seen.clear()
    assert cli.main(["-v", "export", "-v", "RUN", "--out", "x"]) == 0 and seen["v"] == 2
    parser = cli.build_parser()
    assert parser.parse_args(["translate", "RUN", "one", "-vv"]).command_verbose == 2
    assert parser.parse_args(["translate", "RUN", "--", "-v"]).texts == ["-v"]


def test_export_model_version_does_not_collide_with_version(monkeypatch):
    captured = {}
    monkeypatch.setattr(
        "keras_transformer.commands.export.run", lambda args: captured.update(vars(args)) or 0
    )
    assert cli.main(["export", "RUN", "--out", "x", "--model-version", "3"]) == 0
    assert captured["model_version"] == 3 and "version" not in captured


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (
            ["train", "--d-model", "130", "--num-heads", "4"],
            ["--d-model 128 or 132", "--num-heads 2, 5 or 10"],
        ),
        (["pretrain", "--d-model", "30", "--num-heads", "4"], ["--d-model 28 or 32"]),
    ],
)
def test_heads_that_do_not_divide_d_model_are_refused_before_any_data(
    argv, needles, monkeypatch, capsys, tmp_path
):
    def no_data(*args, **kwargs):
        raise AssertionError("data work started before the settings were checked")

    monkeypatch.setattr("keras_transformer.data.load_task", no_data)
    monkeypatch.setattr("keras_transformer.training.recipes.load_corpus", no_data)
    assert cli.main([*argv, "--out", str(tmp_path / "run")]) == cli.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "key_dim" not in err and len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, err
    assert not (tmp_path / "run").exists()


def test_python_warnings_have_the_one_warning_form():
    code = textwrap.dedent(
        """
        import warnings
        from keras_transformer import cli
        cli._configure_logging(0)
        warnings.warn("3 malformed lines" + chr(10) + "  were skipped", UserWarning)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=_env(), timeout=TIMEOUT
    )
    assert result.stderr.decode() == "keras-transformer: warning: 3 malformed lines were skipped\n"


NATIVE_PREFIXES = ("E0000", "W0000", "I0000", "WARNING: All log messages before absl")
"""How TensorFlow's C++ log lines start (absl format), e.g. `E0000 00:00:... util.cc:131]
oneDNN supports DT_INT64 only on platforms with AVX-512`."""


def _native_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(NATIVE_PREFIXES)]


def test_no_native_log_lines_on_stderr_even_with_a_level_in_the_environment(tmp_path):
    # TF_CPP_MIN_LOG_LEVEL=2, common in tutorials, let the oneDNN ERROR line through. Every
    # command meets it: train, translate and export with the level set (one training run: each
    # command sets the level at its start alike). Without it: translate and export in
    # test_translate_streams_and_ends_quietly_when_the_reader_leaves and
    # test_export_ends_with_what_a_client_needs (nothing on stderr), and with -v.
    with_level = _env(TF_CPP_MIN_LOG_LEVEL="2")
    out = tmp_path / "run"
    train = _run(
        "train",
        *("--num-train", "64", "--num-validation", "16", "--num-test", "8"),
        *("--epochs", "1", "--num-layers", "1", "--d-model", "16", "--num-heads", "2"),
        *("--target-lang", "fr"),
        *("--dff", "32", "--batch-size", "16", "--max-length", "96", "--out", out),
        env=with_level,
    )
    assert train.returncode == 0, train.stderr.decode()[-3000:]
    err = train.stderr.decode()
    assert not _native_lines(err), err
    lines = [line for line in err.splitlines() if line.strip()]
    # quiet: no warning, only the progress lines a default run shows, from its first second
    assert lines[0] == "train: starting (TensorFlow takes a few seconds to load)", err
    assert lines[1] == "loading the data (--task numbers)", err
    assert "learning the vocabularies from 64 training examples" in lines, err
    assert not [line for line in lines if "warning" in line or "error" in line], err
    for argv in (("translate", out, "one two"), ("export", out, "--out", tmp_path / "x")):
        result = _run(*argv, env=with_level)
        assert result.returncode == 0, result.stderr.decode()
        assert result.stderr.decode().strip() == "", result.stderr.decode()


@pytest.mark.parametrize("first", ["keras", "tensorflow"])
def test_importing_keras_first_lets_no_native_line_through_after_its_import(first):
    """`import keras` before the package writes TensorFlow's import lines (nothing can stop
    them); after that, the package's import, a model and a prediction write none (CUDA's
    "failed call to cuInit" of the first device probe included)."""
    code = textwrap.dedent(
        f"""
        import sys
        import {first}
        import numpy as np
        print("MARK", file=sys.stderr, flush=True)
        import keras_transformer as kt
        model = kt.models.build_transformer(
            50, 50, num_layers=1, d_model=16, num_heads=2, dff=32, max_length=8
        )
        ids = np.ones((2, 5), "int64")
        print(model.predict({{"source": ids, "target": ids}}, verbose=0).shape)
        """
    )
    env = {k: v for k, v in _env().items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=env, timeout=TIMEOUT
    )
    assert result.returncode == 0, result.stderr.decode()
    after = result.stderr.decode().split("MARK", 1)[1]
    assert after.strip() == "", after


def test_importing_the_package_and_building_a_model_writes_no_native_lines():
    code = textwrap.dedent(
        """
        import numpy as np
        import keras_transformer as kt
        model = kt.models.build_transformer(
            50, 50, num_layers=1, d_model=16, num_heads=2, dff=32, max_length=8
        )
        ids = np.ones((2, 5), "int64")
        print(model.predict({"source": ids, "target": ids}, verbose=0).shape)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=_env(), timeout=TIMEOUT
    )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().strip() == "(2, 5, 50)"
    assert result.stderr.decode().strip() == "", result.stderr.decode()


def test_translate_and_export_say_what_they_do_with_v(tiny_run, tmp_path):
    translate = _run("translate", tiny_run, "one two", "-v")
    assert translate.returncode == 0, translate.stderr.decode()
    err = translate.stderr.decode()
    assert not _native_lines(err), err
    for needle in ("translate: run ", "device CPU", "key/value cache on", "XLA off", "batches of"):
        assert needle in err, err
    assert "loaded in " in err and " text(s) in " in err
    export = _run("export", tiny_run, "--out", tmp_path / "exported", "-v")
    assert export.returncode == 0, export.stderr.decode()
    err = export.stderr.decode()
    assert not _native_lines(err), err
    for needle in ("export: run ", "device CPU", "no XLA", "greedy search", "written in "):
        assert needle in err, err


def test_export_ends_with_what_a_client_needs(tiny_run, tmp_path):
    result = _run("export", tiny_run, "--out", tmp_path / "exported")
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr.decode().strip() == "", result.stderr.decode()  # quiet without -v
    lines = result.stdout.decode().splitlines()
    assert lines[0] == str(tmp_path / "exported" / "1")
    assert len(lines) == 2 and "tensorflow/serving:2." in lines[-1]
    assert "import tensorflow_text" in lines[-1]
