"""`keras-transformer translate`: texts or stdin, one line per input, same output for every flag."""

import io
import sys

import pytest

from keras_transformer.cli import main
from keras_transformer.inference import Translator
from tests.helpers import TINY_MAX_LENGTH
from tests.helpers import TINY_SOURCES as SOURCES

TEXTS = [SOURCES[0], "", SOURCES[2], "one " * 30, SOURCES[4]]


@pytest.fixture(scope="module")
def expected(varied_run):
    translator = Translator.from_run_dir(varied_run)
    return {beam: translator(TEXTS, beam_size=beam) for beam in (1, 3)}


def translate(argv, capsys, stdin=None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    assert main(["translate", *argv]) == 0
    out = capsys.readouterr().out
    assert out.endswith("\n")
    return out[:-1].split("\n")


def test_texts_as_arguments_one_translation_per_line(varied_run, expected, capsys):
    lines = translate([str(varied_run), *TEXTS], capsys)
    assert lines == expected[1]
    assert lines[1] == "" and len(set(lines)) >= 3


def test_lines_from_stdin(varied_run, expected, capsys, monkeypatch):
    stdin = "\n".join(TEXTS) + "\n"
    lines = translate([str(varied_run), "--batch-size", "2"], capsys, stdin, monkeypatch)
    assert lines == expected[1]
    # Windows line ends and a blank last line without a newline
    lines = translate([str(varied_run)], capsys, f"{SOURCES[4]}\r\n   ", monkeypatch)
    assert lines == [expected[1][4], ""]


@pytest.mark.parametrize(
    "flags, beam, where",
    [
        (["--no-cache"], 1, "after RUN_DIR"),
        (["--jit-compile", "on"], 1, "before RUN_DIR"),
        (["--beam-size", "3"], 3, "between texts"),
        (["--beam-size", "3", "--no-cache", "--jit-compile", "on"], 3, "after texts"),
    ],
)
def test_flags_anywhere_give_identical_output(varied_run, expected, capsys, flags, beam, where):
    run = str(varied_run)
    argv = {
        "after RUN_DIR": [run, *flags, *TEXTS],
        "before RUN_DIR": [*flags, run, *TEXTS],
        "between texts": [run, *TEXTS[:2], *flags, *TEXTS[2:]],
        "after texts": [run, *TEXTS, *flags],
    }[where]
    assert translate(argv, capsys) == expected[beam]


def test_texts_that_look_like_options_after_a_double_dash(varied_run, capsys):
    lines = translate([str(varied_run), "--beam-size", "1", "--", "-5", SOURCES[0]], capsys)
    assert len(lines) == 2


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--max-length", str(TINY_MAX_LENGTH + 1)], "exceeds the model's position table of 10"),
        (["--max-length", "2"], "max_length must be an integer >= 3"),
        (["--beam-size", "0"], "beam_size must be an integer >= 1"),
        (["--batch-size", "0"], "--batch-size"),
    ],
)
def test_bad_options_are_one_line_errors(tiny_run, capsys, argv, message):
    assert main(["translate", str(tiny_run), "one", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and err[0].startswith("keras-transformer translate")


def test_unknown_option_is_an_argparse_error(tiny_run, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["translate", str(tiny_run), "one", "--beam", "2x"])
    assert exit_.value.code == 2
    assert "keras-transformer translate" in capsys.readouterr().err
