"""`keras-transformer translate RUN_DIR [TEXT ...]`: one translation per line, in order."""

import argparse
import logging
import os
import queue
import sys
import threading
import time
from collections.abc import Iterator, Sequence

from keras_transformer.choices import FEW_TEXTS, JIT_COMPILE
from keras_transformer.commands._arguments import OneLineArgumentParser, add_search_options
from keras_transformer.errors import UserInputError

DESCRIPTION = (
    "Translate each TEXT, or each line of stdin when no TEXT is given (answered as "
    "lines arrive: a batch goes as soon as the input pauses); prints one translation "
    "per line, an empty line for an empty input."
)
IDLE_SECONDS = 0.1  # stdin: a partial batch is translated once no line came for this long,
MAX_WAIT_SECONDS = 0.5  # or once its first line has waited this long (a slow, steady writer)
_END = object()  # the reader thread's last item
logger = logging.getLogger("keras_transformer.commands.translate")


def _add_options(p: argparse.ArgumentParser) -> None:
    add_search_options(p)
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="no key/value cache: re-run the decoder on the prefix at every step (slow)",
    )
    p.add_argument(
        "--jit-compile",
        choices=JIT_COMPILE,
        default="auto",
        help="compile the search with XLA (once per power-of-two batch size). auto: off for "
        f"up to {FEW_TEXTS} TEXT arguments (compiling costs more than it saves), else on for "
        "the cached search (stdin), for --no-cache only on a GPU",
    )
    p.add_argument(
        "--max-length", type=int, default=None, help="tokens per sequence (default: the run's)"
    )
    p.add_argument(
        "--batch-size",
        type=int,
        default=32,
        help="texts translated together; each batch is printed and flushed when done",
    )


class _RunDirAndTexts(argparse.Action):
    """Parses everything from RUN_DIR on: texts with options among or after them (argparse
    gives a '*' positional only the texts before the first option), and `--`, after which
    every argument is a text, even one that starts with '-'."""

    def __call__(self, parser, namespace, values, option_string=None):
        cut = values.index("--") if "--" in values else len(values)
        head, tail = list(values[:cut]), list(values[cut + 1 :])
        if {"-h", "--help"} & set(head):
            parser.print_help()
            parser.exit()
        inner = OneLineArgumentParser(prog=parser.prog, add_help=False)
        inner.add_argument("run_dir", nargs="?", metavar="RUN_DIR")
        inner.add_argument("texts", nargs="*", metavar="TEXT")
        _add_options(inner)
        # -v / -vv among the texts too (cli.add_verbose_argument's dest; counted with the rest)
        inner.add_argument(
            "-v", "--verbose", action="count", dest="command_verbose", default=argparse.SUPPRESS
        )
        inner.parse_intermixed_args(head, namespace=namespace)  # given options override
        if namespace.run_dir is None:
            if not tail:
                parser.error("the following arguments are required: RUN_DIR")
            namespace.run_dir = tail.pop(0)
        namespace.texts = [*namespace.texts, *tail]


def register(sub) -> None:
    p = sub.add_parser(
        "translate",
        help="translate texts with a trained run directory",
        description=DESCRIPTION,
        usage="%(prog)s [options] RUN_DIR [TEXT ...]",
        epilog="translate ends with exit status 0 when its reader closes the pipe (`| head -1`).",
    )
    p.add_argument(
        "run_dir",
        nargs=argparse.REMAINDER,
        action=_RunDirAndTexts,
        metavar="RUN_DIR [TEXT ...]",
        help="RUN_DIR: the --out directory of `keras-transformer train`. TEXT: texts "
        "to translate; none: read stdin, one text per line. Options may come before, "
        "between or after the texts; after `--` every argument is a text, even "
        "'-five'",
    )
    _add_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from keras_transformer._validation import check_beam_size, check_int
    from keras_transformer.inference.translator import Translator, resolve_jit_compile

    check_int("--batch-size", args.batch_size)
    if args.beam_size is not None:
        check_beam_size(args.beam_size)  # before loading the model
    texts = len(args.texts) if args.texts else None  # None: stdin, a stream
    jit_compile = resolve_jit_compile(args.jit_compile, not args.no_cache, texts=texts)
    started = time.perf_counter()
    translator = Translator.from_run_dir(
        args.run_dir,
        use_cache=not args.no_cache,
        max_length=args.max_length,
        jit_compile=jit_compile,
    )
    if logger.isEnabledFor(logging.INFO):  # -v: what runs (describe() asks TensorFlow)
        loaded = _since(started)
        logger.info("translate: %s; loaded in %.1f s", describe(translator, args.run_dir), loaded)
    logger.info(
        "translate: batches of up to %d texts, %s; %s",
        args.batch_size,
        translator.resolve_search(args.beam_size, args.alpha).describe(),
        "XLA compiles each new batch size once, rounded up to a power of two"
        if translator.jit_compile
        else "no XLA: one trace serves every batch size",
    )
    interactive = not args.texts and sys.stdin.isatty()
    if args.texts:
        batches = _chunks(args.texts, args.batch_size)
    else:
        batches = _stdin_batches(args.batch_size)
    progress, done = sys.stderr.isatty() and not interactive, 0
    try:
        for batch in batches:
            started = time.perf_counter()
            lines = translator(batch, beam_size=args.beam_size, alpha=args.alpha)
            print(*lines, sep="\n", flush=True)
            logger.info("translate: %d text(s) in %.2f s", len(batch), _since(started))
            done += len(batch)
            if progress:
                print(f"\rtranslate: {done} lines", end="", file=sys.stderr, flush=True)
    except BrokenPipeError:
        _silence_stdout()
    finally:
        if progress and done:
            print(file=sys.stderr)
    return 0


def describe(translator, run_dir: str) -> str:
    """What a loaded `Translator` runs: the run, its sizes, the device, the cache and XLA (the
    `-v` line of `translate` and `export`)."""
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    device = f"{len(gpus)} GPU(s)" if gpus else "CPU only (no GPU found)"
    kind = "decoder-only" if type(translator).__name__ == "PrefixTranslator" else "encoder-decoder"
    parameters = f"{translator.model.count_params():,}"
    cache = "key/value cache on" if translator.use_cache else "no key/value cache (--no-cache)"
    xla = "XLA on" if translator.jit_compile else "XLA off"
    return (
        f"run {run_dir} ({kind}, {parameters} parameters, max_length {translator.max_length}); "
        f"device {device}; {cache}; {xla}"
    )


def _since(started: float) -> float:
    return time.perf_counter() - started


def _chunks(texts: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(texts), size):
        yield list(texts[start : start + size])


def _stdin_batches(size: int) -> Iterator[list[str]]:
    """stdin's lines in batches of up to `size`: a batch holds the lines that have arrived and
    goes once the input pauses (`IDLE_SECONDS`), so a writer that waits for each answer gets
    it at once, while a file or a fast pipe still fills whole batches. A thread reads."""
    pending = queue.Queue(maxsize=4 * size)  # read ahead while a batch is translated
    threading.Thread(target=_read_stdin, args=(pending,), name="stdin", daemon=True).start()
    number, error = 0, None
    while error is None:
        batch, item = [], pending.get()  # wait as long as it takes for the first line
        deadline = time.monotonic() + MAX_WAIT_SECONDS
        while True:
            if item is _END or isinstance(item, BaseException):
                error = item
                break
            number += 1
            batch.append(_decode(item, number))
            if len(batch) == size:
                break
            wait = min(IDLE_SECONDS, deadline - time.monotonic())
            try:  # a line already there joins the batch even after the deadline
                item = pending.get(timeout=wait) if wait > 0 else pending.get_nowait()
            except queue.Empty:
                break
        if batch:
            yield batch
    if error is not _END:
        raise error


def _read_stdin(pending: queue.Queue) -> None:
    """The reader thread: puts each line of stdin (bytes, without "\\n"), then `_END`. It
    reads the file descriptor, not `sys.stdin.buffer`: a daemon thread blocked inside the
    buffered reader's lock can abort the interpreter at exit (after `| head -1`)."""
    try:
        for line in _raw_lines(sys.stdin):
            pending.put(line)
    except Exception as error:  # raised in the main thread, in order
        pending.put(error)
    pending.put(_END)


def _raw_lines(stream) -> Iterator[bytes | str]:
    try:
        descriptor = stream.fileno()
    except (AttributeError, OSError, ValueError):  # a stream without a file (tests, embedding)
        yield from stream
        return
    parts = []  # the start of a line split across reads
    while chunk := os.read(descriptor, 1 << 16):
        *lines, rest = chunk.split(b"\n")
        if lines:
            yield b"".join([*parts, lines[0]])
            yield from lines[1:]
            parts = []
        parts.append(rest)
    if last := b"".join(parts):
        yield last


def _decode(raw: bytes | str, number: int) -> str:
    """A line without its line end, decoded; a UTF-8 byte order mark opening stdin is
    dropped (Windows editors write one); invalid UTF-8 names the line."""
    try:
        text = (raw if isinstance(raw, str) else raw.decode("utf-8")).rstrip("\r\n")
    except UnicodeDecodeError as error:
        raise UserInputError(
            f"stdin line {number} is not valid UTF-8 (byte {error.start + 1} "
            f"of the line is 0x{raw[error.start]:02x}); convert the input "
            f"first, e.g. `iconv -f latin1 -t utf-8`."
        ) from None
    return text.removeprefix("\ufeff") if number == 1 else text


def _silence_stdout() -> None:
    """After the reader left: send stdout to /dev/null so the final flush at exit is quiet."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (tests)
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, descriptor)
    os.close(null)
