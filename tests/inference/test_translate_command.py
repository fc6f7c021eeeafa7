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


def test_a_double_dash_lets_texts_start_with_a_dash(varied_run, expected, capsys):
    """`-five` is no number: before, the re-parse after RUN_DIR took it for an option."""
    argv = [str(varied_run), "--jit-compile", "off", "--", "-five", SOURCES[0], "--beam-size"]
    lines = translate(argv, capsys)
    assert len(lines) == 3 and lines[1] == expected[1][0]
    # options before the `--` still apply; RUN_DIR may follow it
    assert translate(["--beam-size", "3", "--", str(varied_run), *TEXTS], capsys) == expected[3]


def test_usage_says_texts_are_optional_and_stdin_is_read(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["translate", "--help"])
    assert exit_.value.code == 0
    help_text = capsys.readouterr().out
    assert "RUN_DIR [TEXT ...]" in help_text.splitlines()[0] and "stdin" in help_text
    with pytest.raises(SystemExit) as exit_:
        main(["translate"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "required: RUN_DIR (" in err and "TEXT" not in err


def test_a_byte_order_mark_opening_stdin_is_dropped(varied_run, expected, capsys, monkeypatch):
    stdin = f"\ufeff{SOURCES[0]}\n{SOURCES[2]}\n"
    lines = translate([str(varied_run), "--jit-compile", "off"], capsys, stdin, monkeypatch)
    assert lines == [expected[1][0], expected[1][2]]


def test_stdin_fills_whole_batches_when_lines_are_waiting(monkeypatch):
    from keras_transformer.commands.translate import _stdin_batches

    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(f"line {i}\n" for i in range(70))))
    batches = list(_stdin_batches(32))
    assert [len(b) for b in batches] == [32, 32, 6]
    assert sum(batches, []) == [f"line {i}" for i in range(70)]


def test_a_partial_batch_goes_when_the_pipe_pauses(monkeypatch):
    import os
    import threading

    from keras_transformer.commands.translate import _stdin_batches

    read, write = os.pipe()
    monkeypatch.setattr(sys, "stdin", os.fdopen(read, "rb"))
    os.write(write, "\ufeffa\r\nb".encode() + b"\n\xc3")  # a BOM, CRLF, a split character
    batches, got = _stdin_batches(32), []
    reader = threading.Thread(target=lambda: got.append(next(batches)), daemon=True)
    reader.start()
    reader.join(timeout=5)
    assert got == [["a", "b"]]  # answered while the pipe is still open
    os.write(write, b"\xa9\n" + b"last")
    os.close(write)
    assert list(batches) == [["\u00e9", "last"]]
    sys.stdin.close()


def test_each_line_is_answered_as_it_arrives_from_a_pausing_writer(varied_run, expected):
    """A real process and pipe: each answer within a second of its line (timed after the first
    answer, which waits for the model and its XLA compile); before, the first answer waited
    for 32 lines or the end of the input."""
    import os
    import queue
    import subprocess
    import threading
    import time

    command = [sys.executable, "-m", "keras_transformer", "translate", str(varied_run)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    answers = queue.Queue()
    threading.Thread(
        target=lambda: [answers.put(line) for line in process.stdout], daemon=True
    ).start()

    def ask(text: str, timeout: float) -> tuple[str, float]:
        start = time.monotonic()
        process.stdin.write(text.encode() + b"\n")
        process.stdin.flush()
        try:
            line = answers.get(timeout=timeout).decode().rstrip("\n")
        except queue.Empty:
            pytest.fail(f"no answer to {text!r} within {timeout} s")
        return line, time.monotonic() - start

    try:
        assert ask(TEXTS[0], timeout=120)[0] == expected[1][0]  # model loaded and compiled
        for index in (2, 4):
            time.sleep(3)  # the writer pauses
            answer, seconds = ask(TEXTS[index], timeout=10)
            assert answer == expected[1][index]
            assert seconds < 1.0, f"answered after {seconds:.2f} s"
        process.stdin.close()
        assert process.wait(timeout=60) == 0, process.stderr.read().decode()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
