"""`keras-transformer` command line (also `python -m keras_transformer`)."""

import argparse
import contextlib
import functools
import importlib
import logging
import os
import signal
import sys
import time
import traceback
import warnings

from keras_transformer import __version__
from keras_transformer._quiet import import_tensorflow_quietly, quiet_native_logs
from keras_transformer.commands._arguments import HelpFormatter
from keras_transformer.commands._arguments import OneLineArgumentParser as _Parser
from keras_transformer.errors import MissingExtraError, UserInputError

# Before anything imports TensorFlow: no C++ log lines (cuInit, oneDNN); `-vv` shows them
# (`_main` sets the level once the verbosity is known).
_USER_TF_LOG_LEVEL = os.environ.get("TF_CPP_MIN_LOG_LEVEL")
quiet_native_logs()

COMMANDS = (
    "train",
    "pretrain",
    "translate",
    "export",
    "attention",
    "compare",
    "benchmark",
    "exercises",
)
NO_TENSORFLOW = frozenset({"exercises"})  # commands that run without importing TensorFlow
RESUMABLE = frozenset({"train", "pretrain"})  # an interrupted run is resumed by the same command
EXIT_OK, EXIT_USER_ERROR, EXIT_INTERNAL_ERROR = 0, 2, 3
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # 128 + SIGINT, 128 + SIGTERM, as shells report
EPILOG = """\
exit status: 0 success; 2 the command cannot run as given: a usage error (unknown
option, bad value) or bad input (a missing or damaged file or run directory, bad
data), reported as one line on stderr; 3 internal error (a bug in
keras_transformer: a traceback and a line asking to report it); 130 interrupted
(Ctrl-C, SIGINT) and 143 terminated (SIGTERM), one line on stderr: train and
pretrain keep their progress, and the same command resumes them.
KERAS_TRANSFORMER_TRACEBACK=1 shows the traceback of user errors too.
Run `keras-transformer COMMAND --help` for a command's options and defaults.
"""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's `KeyboardInterrupt`, so that training stops the same way."""


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command (one per `keras_transformer.commands.<name>`); imports no
    TensorFlow, so `--help` and `--version` start fast."""
    parser = _Parser(
        prog="keras-transformer",
        description=__doc__.splitlines()[0],
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"%(prog)s {__version__}",
        help="print the package version and exit",
    )
    add_verbose_argument(parser, "verbose")
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_Parser, title="commands"
    )
    # every command takes -v / -vv after its name too, and shows its defaults
    add_parser = functools.partial(sub.add_parser, formatter_class=HelpFormatter)

    def add_command(name, **options):
        command = add_parser(name, **options)
        add_verbose_argument(command, "command_verbose")
        return command

    sub.add_parser = add_command
    for name in COMMANDS:
        importlib.import_module(f"keras_transformer.commands.{name}").register(sub)
    return parser


def help_texts() -> dict[str, str]:
    """`--help` of the main parser (`"main"`) and of every command, as printed (the docs site
    shows them)."""
    parser = build_parser()
    (commands,) = [action for action in parser._actions if action.dest == "command"]
    return {
        "main": parser.format_help(),
        **{name: commands.choices[name].format_help() for name in COMMANDS},
    }


def add_verbose_argument(parser: argparse.ArgumentParser, dest: str) -> None:
    """`-v` / `-vv`, before or after the command name (counted together)."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        dest=dest,
        help="-v: what the command is doing (data, sizes, devices, epochs); "
        "-vv: also debug lines and TensorFlow's own logs (default: quiet)",
    )


def main(argv: list[str] | None = None) -> int:
    """Runs one command; returns its exit status (`EPILOG`). Ctrl-C and SIGTERM, at any moment,
    end with one line and 130 / 143 instead of a traceback.

    `train --time-budget` counts from the command's start: the process's start when `argv` is
    None (the `keras-transformer` program), else this call's."""
    started = time.time()
    if argv is None:
        from keras_transformer.training.wallclock import process_start_time

        started = process_start_time() or started
    state = {"command": None, "started": started}
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    with contextlib.suppress(ValueError):  # not the main thread: the handlers stay as they are
        signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started ignoring it
        signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        return _main(argv, state)
    except KeyboardInterrupt as interrupt:
        name = "keras-transformer" + (f" {state['command']}" if state["command"] else "")
        stopped = "terminated" if isinstance(interrupt, Terminated) else "interrupted"
        detail = getattr(interrupt, "resume_hint", "")
        if not detail and state["command"] in RESUMABLE:
            detail = "while starting, before anything was written"
        print(f"{name}: {stopped}{' ' + detail if detail else ''}", file=sys.stderr, flush=True)
        return EXIT_TERMINATED if isinstance(interrupt, Terminated) else EXIT_INTERRUPTED
    finally:
        for number, handler in previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(number, handler)


def _raise_terminated(signum, frame):
    raise Terminated()


def _main(argv: list[str] | None, state: dict) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    verbose = vars(args).pop("verbose") + vars(args).pop("command_verbose", 0)
    state["command"] = args.command
    if args.command == "train":
        args.started = state["started"]
    if args.command in RESUMABLE:  # the resume hint of an interruption repeats the command
        args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.command is None:  # a bare `keras-transformer`: the help, as `git` does
        parser.print_help()
        return EXIT_OK
    _configure_logging(verbose)
    if verbose < 2:  # even with TF_CPP_MIN_LOG_LEVEL=2 in the environment: no native lines
        quiet_native_logs(force=True)
    elif "tensorflow" not in sys.modules:  # -vv: the user's level, else every line
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = _USER_TF_LOG_LEVEL or "0"
    if args.command in RESUMABLE:  # a line within the first second, before TensorFlow loads
        progress = logging.getLogger("keras_transformer.progress")
        progress.setLevel(logging.INFO)  # shown by default, as the runs' progress lines
        progress.info("%s: starting (TensorFlow takes a few seconds to load)", args.command)
    if args.command not in NO_TENSORFLOW and verbose < 2:
        import_tensorflow_quietly()
    try:
        return args.func(args)
    except Exception as error:
        if os.environ.get("KERAS_TRANSFORMER_TRACEBACK"):
            raise
        if user_error(error):
            message = (str(error).strip().splitlines() or [type(error).__name__])[0]
            print(f"keras-transformer {args.command}: error: {message}", file=sys.stderr)
            return EXIT_USER_ERROR
        traceback.print_exc()
        name = f"keras-transformer {args.command}: internal error ({type(error).__name__})"
        print(f"{name}; please report it with the traceback above.", file=sys.stderr)
        return EXIT_INTERNAL_ERROR


USER_ERRORS = (UserInputError, OSError, MissingExtraError)
"""What a user can fix: the package's own `UserInputError` (a bad value, file or run
directory), a file the system cannot read or write, a missing optional dependency. Any other
exception, a plain `ValueError` included, is a bug (argparse reports bad options itself)."""


def user_error(error: BaseException) -> bool:
    """Errors a user can fix (`USER_ERRORS`), reported as one line; anything else is a bug."""
    return isinstance(error, USER_ERRORS)


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if record.levelno >= logging.WARNING:
            return f"keras-transformer: {record.levelname.lower()}: {text}"
        return text


def _configure_logging(verbose: int) -> None:
    """WARNING and above by default; `-v` INFO (progress), `-vv` DEBUG. Python warnings (the
    package's, Keras's) print as `keras-transformer: warning: MESSAGE`, without file paths."""
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    logging.getLogger("keras_transformer").setLevel(level)
    root = logging.getLogger()
    if not root.handlers:  # a real process (under pytest, its capture handler is there)
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_Formatter("%(message)s"))
        root.addHandler(handler)
        warnings.showwarning = _show_warning


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """`warnings.showwarning` of the command line: the message only, in the one warning form."""
    text = " ".join(str(message).split())
    logging.getLogger("keras_transformer").warning("%s", text)


if __name__ == "__main__":
    sys.exit(main())
