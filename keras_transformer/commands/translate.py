"""`keras-transformer translate RUN_DIR [TEXT ...]`: one translation per line.

Options may come before, between or after the texts
(`translate RUN --no-cache "text"` and `translate RUN "text" --beam-size 4`
both work). An empty or whitespace-only text (or stdin line) translates to an
empty line, so output line `i` is always the translation of input `i`.
"""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = (
    "Translate each TEXT (or each line of stdin when no TEXT is given); prints one "
    "translation per line, an empty line for an empty input."
)


def _add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--beam-size", type=int, default=1, help="1 = greedy search (default)")
    p.add_argument("--alpha", type=float, default=0.6, help="beam search length-penalty exponent")
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="no key/value cache: re-run the decoder on the prefix at every step (slow)",
    )
    p.add_argument(
        "--jit-compile",
        action="store_true",
        help="compile the search with XLA (tokenization stays outside); pays on GPUs and for "
        "long outputs, costs a compilation per input shape",
    )
    p.add_argument(
        "--max-length",
        type=int,
        default=None,
        help="tokens per sequence (default: the run's; at most the model's position table)",
    )
    p.add_argument("--batch-size", type=int, default=64)


def register(sub) -> None:
    p = sub.add_parser(
        "translate", help="translate texts with a trained run directory", description=DESCRIPTION
    )
    p.add_argument("run_dir", help="directory written by `keras-transformer train`")
    # argparse (Python < 3.12) assigns a '*' positional once, at the first run of
    # positionals, so `RUN --no-cache "text"` would leave "text" unrecognized. The
    # subcommand collects everything after RUN_DIR here and `run` parses it again
    # with `parse_intermixed_args`, which lets options and texts mix freely.
    p.add_argument(
        "texts",
        nargs=argparse.REMAINDER,
        help="texts to translate (default: read lines from stdin); options may follow them",
    )
    _add_options(p)
    p.set_defaults(func=run)


def _parse_texts_and_options(args) -> argparse.Namespace:
    """Options given among or after the texts, on top of those given before RUN_DIR."""
    parser = argparse.ArgumentParser(prog="keras-transformer translate", description=DESCRIPTION)
    parser.add_argument("texts", nargs="*")
    _add_options(parser)
    namespace = argparse.Namespace(**{k: v for k, v in vars(args).items() if k != "texts"})
    return parser.parse_intermixed_args(args.texts, namespace=namespace)


def run(args) -> int:
    from keras_transformer.inference import Translator
    from keras_transformer.inference.translator import check_beam_size

    args = _parse_texts_and_options(args)
    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be >= 1; received {args.batch_size}.")
    check_beam_size(args.beam_size)  # before loading the model
    translator = Translator.from_run_dir(
        args.run_dir,
        use_cache=not args.no_cache,
        max_length=args.max_length,
        jit_compile=args.jit_compile,
    )
    texts = args.texts or [line.rstrip("\r\n") for line in sys.stdin]
    for begin in range(0, len(texts), args.batch_size):
        batch = texts[begin : begin + args.batch_size]
        for line in translator(batch, beam_size=args.beam_size, alpha=args.alpha):
            print(line)
    return 0
