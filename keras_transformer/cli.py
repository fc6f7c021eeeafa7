"""`keras-transformer` command line (also `python -m keras_transformer`)."""

import argparse
import contextlib
import functools
import importlib
import logging
import os
import sys
import tempfile
import traceback

from keras_transformer import __version__
from keras_transformer.commands._arguments import OneLineArgumentParser as _Parser
from keras_transformer.errors import MissingExtraError

# Before anything imports TensorFlow: no C++ start-up lines (cuInit, oneDNN); `-vv` shows them.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

COMMANDS = ("train", "pretrain", "translate", "export", "attention", "compare", "benchmark",
            "exercises")  # fmt: skip
NO_TENSORFLOW = frozenset({"exercises"})  # commands that run without importing TensorFlow
EXIT_OK, EXIT_USER_ERROR, EXIT_INTERNAL_ERROR = 0, 2, 3
EPILOG = """\
exit status: 0 success; 2 the command cannot run as given: a usage error (unknown
option, bad value) or bad input (a missing or damaged file or run directory, bad
data), reported as one line on stderr; 3 internal error (a bug in
keras_transformer: a traceback and a line asking to report it). translate ends
with 0 when its reader closes the pipe (`| head -1`). KERAS_TRANSFORMER_TRACEBACK=1
shows the traceback of user errors too.
"""


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command (one per `keras_transformer.commands.<name>`); imports no
    TensorFlow, so `--help` and `--version` start fast."""
    raw = argparse.RawDescriptionHelpFormatter
    parser = _Parser(prog="keras-transformer", description=__doc__.splitlines()[0], epilog=EPILOG,
                     formatter_class=raw)  # fmt: skip
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="-v: progress (INFO log lines); -vv: also debug lines and "
                        "TensorFlow's own logs")  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    # every command's --help ends with the exit statuses
    sub.add_parser = functools.partial(sub.add_parser, epilog=EPILOG, formatter_class=raw)
    for name in COMMANDS:
        importlib.import_module(f"keras_transformer.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    verbose = vars(args).pop("verbose")  # the commands see only their own options
    _configure_logging(verbose)
    if args.command not in NO_TENSORFLOW and verbose < 2:
        _import_tensorflow_quietly()
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


def user_error(error: BaseException) -> bool:
    """Errors a user can fix, reported as one line; anything else is a bug."""
    tf = sys.modules.get("tensorflow")  # TensorFlow's own errors only once it is imported
    fixable = (ValueError, OSError, MissingExtraError) + ((tf.errors.OpError,) if tf else ())
    return isinstance(error, fixable)


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if record.levelno >= logging.WARNING:
            return f"keras-transformer: {record.levelname.lower()}: {text}"
        return text


def _configure_logging(verbose: int) -> None:
    """WARNING and above by default; `-v` INFO (progress), `-vv` DEBUG."""
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    logging.getLogger("keras_transformer").setLevel(level)
    root = logging.getLogger()
    if not root.handlers:  # a real process (under pytest, its capture handler is there)
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_Formatter("%(message)s"))
        root.addHandler(handler)


def _import_tensorflow_quietly() -> None:
    """Imports TensorFlow with stderr (fd 2) sent to a temporary file: CUDA's stubs write
    "Could not find cuda drivers" before TensorFlow's log level applies; shown on failure."""
    if "tensorflow" in sys.modules:
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            import tensorflow as tf
        except BaseException:
            os.dup2(saved, 2)
            sink.seek(0)
            sys.stderr.write(sink.read().decode(errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    tf.get_logger().setLevel(logging.ERROR)
    with contextlib.suppress(ImportError):  # absl comes with TensorFlow
        from absl import logging as absl_logging

        absl_logging.set_verbosity(absl_logging.ERROR)


if __name__ == "__main__":
    sys.exit(main())
