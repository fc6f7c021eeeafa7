"""`keras-transformer` command line.

Each subcommand lives in `keras_transformer.commands.<name>` and exposes
`register(subparsers)`; errors the user can fix are printed as one line on
stderr with exit status 2, never as a traceback (set the environment variable
`KERAS_TRANSFORMER_TRACEBACK=1` to see the traceback instead).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

COMMANDS = ("train", "pretrain", "translate", "export", "compare", "benchmark")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="keras-transformer", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"keras_transformer.commands.{name}").register(sub)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        return args.func(args)
    except Exception as error:
        if os.environ.get("KERAS_TRANSFORMER_TRACEBACK") or not _user_error(error):
            raise
        message = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        print(f"keras-transformer {args.command}: error: {message}", file=sys.stderr)
        return 2


def _user_error(error: Exception) -> bool:
    """Errors a user can fix (bad values, files, data): one line, not a traceback.

    Bad arguments and data raise `ValueError` / `TypeError`; files `OSError`
    (missing, not a directory, no permission, a failed download); TensorFlow
    reports bad input to its ops as `tf.errors.OpError`.
    """
    if isinstance(error, (ValueError, TypeError, OSError)):
        return True
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(error, tf.errors.OpError)


if __name__ == "__main__":
    sys.exit(main())
