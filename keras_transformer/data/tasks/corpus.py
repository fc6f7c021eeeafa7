"""`load_corpus`: unlabelled text for pre-training, generated or from the user's file;
`split_corpus` holds some out."""

from __future__ import annotations

import logging
import os

import numpy as np

from keras_transformer.data.tasks.reviews import reviews_corpus
from keras_transformer.data.text.normalize import normalize_text
from keras_transformer.errors import UserInputError

logger = logging.getLogger(__name__)

GENERATED_CORPORA: tuple[str, ...] = ("reviews",)
"""Corpus names `load_corpus` generates offline; anything else is a file path."""


def read_text_file(path: str | os.PathLike) -> list[str]:
    """The non-empty lines of a UTF-8 text file, normalised like all tokenizer input.

    Blank lines are skipped (and counted in a log message), never silently
    merged; a file that cannot be read, is not UTF-8 or holds no text raises
    an error naming the file (and the line, for bad bytes).

    Args:
        path: a text file, one example (sentence, paragraph, review) per line.

    Returns:
        The lines, in file order.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    >>> _ = open(path, "w").write("the plot was dull\\n\\n  a witty   script \\n")
    >>> read_text_file(path)
    ['the plot was dull', 'a witty script']
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"corpus file {path!r} does not exist or is not a file; pass a UTF-8 text file "
            "with one text per line, or a generated corpus name: " + ", ".join(GENERATED_CORPORA)
        )
    texts, blank = [], 0
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise UserInputError(
                    f"{path}: line {number} is not valid UTF-8 ({error.reason}); re-encode "
                    "the file as UTF-8."
                ) from None
            text = normalize_text(line)
            if text:
                texts.append(text)
            else:
                blank += 1
    if not texts:
        raise UserInputError(f"corpus file {path!r} holds no text; write one text per line.")
    if blank:
        logger.info("%s: skipped %d blank line(s); %d texts read.", path, blank, len(texts))
    return texts


def load_corpus(source: str, *, num_sentences: int = 10_000, seed: int = 0) -> list[str]:
    """Unlabelled texts: a generated corpus by name, or the lines of a file.

    Args:
        source: `"reviews"` (`reviews_corpus`, generated offline) or the
            path of a UTF-8 text file with one text per line.
        num_sentences: size of a generated corpus (ignored for a file).
        seed: seed of a generated corpus.

    Returns:
        A list of strings.

    Example:

    >>> len(load_corpus("reviews", num_sentences=5))
    5
    """
    if source in GENERATED_CORPORA:
        return reviews_corpus(num_sentences, seed)  # reviews_corpus checks both
    return read_text_file(source)


def split_corpus(texts: list[str], validation_fraction: float, seed: int) -> tuple[list, list]:
    """Shuffled `(train, validation)` texts; validation gets at least one text.

    Example:
    >>> train, validation = split_corpus([f"text {i}" for i in range(10)], 0.2, seed=0)
    >>> len(train), len(validation), sorted(train + validation) == sorted(f"text {i}" for i in range(10))
    (8, 2, True)
    """
    if len(texts) < 2:
        raise UserInputError(
            f"the corpus holds {len(texts)} text(s); pre-training needs at least 2 "
            "(training and validation)."
        )
    order = np.random.default_rng(seed).permutation(len(texts))
    count = min(len(texts) - 1, max(1, round(len(texts) * validation_fraction)))
    return [texts[i] for i in order[count:]], [texts[i] for i in order[:count]]
