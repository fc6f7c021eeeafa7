"""`keras-transformer translate RUN_DIR [TEXT ...]`: one translation per line, in order."""

import argparse
import itertools
import os
import sys
from collections.abc import Iterator

from keras_transformer.commands._arguments import NON_NEGATIVE, OneLineArgumentParser
from keras_transformer.errors import UserInputError

DESCRIPTION = ("Translate each TEXT (or each line of stdin when no TEXT is given); prints one "
               "translation per line, an empty line for an empty input.")  # fmt: skip


def _add_options(p: argparse.ArgumentParser) -> None:
    # fmt: off
    p.add_argument("--beam-size", type=int, default=1, help="1 = greedy search (default)")
    p.add_argument("--alpha", type=NON_NEGATIVE, default=0.6,
                   help="beam search length-penalty exponent (a finite number >= 0)")
    p.add_argument("--no-cache", action="store_true",
                   help="no key/value cache: re-run the decoder on the prefix at every step (slow)")
    p.add_argument("--jit-compile", choices=("auto", "on", "off"), default="auto",
                   help="compile the search with XLA (once per power-of-two batch size). auto: "
                   "on for the cached search, for --no-cache only on a GPU")
    p.add_argument("--max-length", type=int, default=None,
                   help="tokens per sequence (default: the run's)")
    p.add_argument("--batch-size", type=int, default=32,
                   help="texts translated together; each batch is printed and flushed when done")
    # fmt: on


def register(sub) -> None:
    p = sub.add_parser(
        "translate", help="translate texts with a trained run directory", description=DESCRIPTION
    )
    p.add_argument("run_dir", help="directory written by `keras-transformer train`")
    # argparse assigns a '*' positional once: take all after RUN_DIR, re-parsed intermixed in `run`
    p.add_argument("texts", nargs=argparse.REMAINDER, help="texts to translate (default: "
                   "read lines from stdin); options may follow them")  # fmt: skip
    _add_options(p)
    p.set_defaults(func=run)


def _parse_texts_and_options(args) -> argparse.Namespace:
    """Options given among or after the texts, on top of those given before RUN_DIR."""
    parser = OneLineArgumentParser(prog="keras-transformer translate", description=DESCRIPTION)
    parser.add_argument("texts", nargs="*")
    _add_options(parser)
    namespace = argparse.Namespace(**{k: v for k, v in vars(args).items() if k != "texts"})
    return parser.parse_intermixed_args(args.texts, namespace=namespace)


def run(args) -> int:
    from keras_transformer.inference.translator import Translator, check_beam_size

    args = _parse_texts_and_options(args)
    if args.batch_size < 1:
        raise UserInputError(f"--batch-size must be >= 1; received {args.batch_size}.")
    check_beam_size(args.beam_size)  # before loading the model
    jit = _use_xla(args.jit_compile, not args.no_cache)
    translator = Translator.from_run_dir(args.run_dir, use_cache=not args.no_cache,
                                         max_length=args.max_length, jit_compile=jit)  # fmt: skip
    interactive = not args.texts and sys.stdin.isatty()
    texts, size = iter(args.texts or _stdin_lines()), 1 if interactive else args.batch_size
    progress, done = sys.stderr.isatty() and not interactive, 0
    try:
        while batch := list(itertools.islice(texts, size)):
            lines = translator(batch, beam_size=args.beam_size, alpha=args.alpha)
            print(*lines, sep="\n", flush=True)
            done += len(batch)
            if progress:
                print(f"\rtranslate: {done} lines", end="", file=sys.stderr, flush=True)
    except BrokenPipeError:
        _silence_stdout()
    finally:
        if progress and done:
            print(file=sys.stderr)
    return 0


def _use_xla(setting: str, use_cache: bool = True) -> bool:
    """`auto`: XLA for the cached search (~4x faster even on a 2-core CPU), for the uncached
    one only on a GPU (on a CPU its full-buffer steps are slower than the plain prefix)."""
    if setting != "auto" or use_cache:
        return setting != "off"
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))


def _stdin_lines() -> Iterator[str]:
    """stdin one line at a time, without its line end; invalid UTF-8 names the line."""
    # sys.stdin may be a text stream without `buffer` (tests, embedding programs)
    for number, raw in enumerate(getattr(sys.stdin, "buffer", None) or sys.stdin, start=1):
        try:
            yield (raw if isinstance(raw, str) else raw.decode("utf-8")).rstrip("\r\n")
        except UnicodeDecodeError as error:
            raise UserInputError(f"stdin line {number} is not valid UTF-8 (byte {error.start + 1} "
                                 f"of the line is 0x{raw[error.start]:02x}); convert the input "
                                 f"first, e.g. `iconv -f latin1 -t utf-8`.") from None  # fmt: skip


def _silence_stdout() -> None:
    """After the reader left: send stdout to /dev/null so the final flush at exit is quiet."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (tests)
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, descriptor)
    os.close(null)
