"""Synthetic sequence tasks for tests and analysis: copy, reverse, sort, recall.

Every example is a sequence of symbols from a small alphabet, the letters
`a..z` then `A..Z` (`vocab_size` of them), written as space-separated text
("c a d b"), so it goes through the same tokenizer and pipeline as real text.
Each symbol is a one-character word, so a WordPiece tokenizer learned on the
task maps every symbol to exactly one token: positions in the text are
positions in the token sequence.

- `"copy"`: the target is the source.
- `"reverse"`: the target is the source in reverse order.
- `"sort"`: the target is the source sorted in alphabet order
  (`a < b < ... < z < A < ... < Z`), repeats kept.
- `"recall"`: the target is the single symbol `distance` positions from the end
  of the source, `source.split()[-distance]` (distance 1 is the last symbol,
  distance `len` the first). A left-to-right recurrent encoder must carry that
  symbol through `distance - 1` later steps; attention reaches it in one.

Sequence lengths are drawn uniformly from `length=(min, max)` (inclusive) and
symbols uniformly from the alphabet. Sources are distinct across the whole task,
so no test source appears in training. Everything follows from
`numpy.random.default_rng(seed)`.
"""

from __future__ import annotations

import string
from collections.abc import Callable

import numpy as np

from keras_transformer._validation import (
    check_int,
    check_length_range,
    check_positive_int,
    check_seed,
)
from keras_transformer.data.tasks.task import Task
from keras_transformer.errors import UserInputError

ALPHABET: str = string.ascii_lowercase + string.ascii_uppercase
"""The symbols of the synthetic tasks, in order: `a..z` then `A..Z`."""


def _check_vocab_size(vocab_size: int) -> int:
    check_int("vocab_size", vocab_size, minimum=2)
    if vocab_size > len(ALPHABET):
        raise UserInputError(
            f"vocab_size={vocab_size} must be <= {len(ALPHABET)} (the symbols a..z, A..Z)"
        )
    return vocab_size


def _sample_sequences(
    count: int, vocab_size: int, length: tuple[int, int], rng: np.random.Generator
) -> list[tuple[int, ...]]:
    """`count` distinct symbol-index sequences with lengths uniform in `length`."""
    low, high = length
    possible = sum(vocab_size**n for n in range(low, high + 1))
    if count > possible:
        raise UserInputError(
            f"cannot draw {count} distinct sequences: vocab_size={vocab_size} and "
            f"length={length} allow only {possible}; raise vocab_size or the lengths, or "
            "ask for fewer examples"
        )
    seen: set[tuple[int, ...]] = set()
    sequences: list[tuple[int, ...]] = []
    while len(sequences) < count:
        draws = 2 * (count - len(sequences)) + 16
        lengths = rng.integers(low, high + 1, size=draws)
        symbols = rng.integers(0, vocab_size, size=(draws, high))
        for n, row in zip(lengths.tolist(), symbols.tolist(), strict=True):
            sequence = tuple(row[:n])
            if sequence not in seen:
                seen.add(sequence)
                sequences.append(sequence)
                if len(sequences) == count:
                    break
    return sequences


def _text(sequence: tuple[int, ...] | list[int]) -> str:
    return " ".join(ALPHABET[i] for i in sequence)


def _synthetic_task(
    name: str,
    target_fn: Callable[[tuple[int, ...]], list[int]],
    *,
    vocab_size: int,
    length: tuple[int, int],
    num_train: int,
    num_validation: int,
    num_test: int,
    seed: int,
    extra_info: dict | None = None,
) -> Task:
    check_positive_int("num_train", num_train)
    check_int("num_validation", num_validation, minimum=0)
    check_int("num_test", num_test, minimum=0)
    check_seed(seed)
    total = num_train + num_validation + num_test
    sequences = _sample_sequences(total, vocab_size, length, np.random.default_rng(seed))
    pairs = [(_text(s), _text(target_fn(s))) for s in sequences]
    return Task(
        name=name,
        source_lang="symbols",
        target_lang="symbols",
        train=pairs[:num_train],
        validation=pairs[num_train : num_train + num_validation],
        test=pairs[num_train + num_validation :],
        info={"vocab_size": vocab_size, "length": length, "seed": seed, **(extra_info or {})},
    )


def _sequence_task(name, target_fn, vocab_size, length, **options) -> Task:
    """`_synthetic_task` after checking the arguments copy, reverse and sort share."""
    vocab_size = _check_vocab_size(vocab_size)
    length = check_length_range("length", length)
    return _synthetic_task(name, target_fn, vocab_size=vocab_size, length=length, **options)


def _sequence_task_function(name: str, target_fn, doc: str):
    """A public task function whose target is `target_fn(source symbols)`."""

    def task(
        *,
        vocab_size: int = 10,
        length: int | tuple[int, int] = (4, 8),
        num_train: int = 2_000,
        num_validation: int = 200,
        num_test: int = 200,
        seed: int = 0,
    ) -> Task:
        sizes = dict(num_train=num_train, num_validation=num_validation, num_test=num_test)
        return _sequence_task(name, target_fn, vocab_size, length, seed=seed, **sizes)

    task.__name__ = task.__qualname__ = f"{name}_task"
    task.__doc__ = doc
    return task


copy_task = _sequence_task_function(
    "copy",
    list,
    """The target is the source.

    Args:
        vocab_size: number of symbols (2..52), taken from `ALPHABET` in order.
        length: sequence length, an int or an inclusive `(min, max)` pair.
        num_train: number of training pairs.
        num_validation: number of validation pairs.
        num_test: number of test pairs.
        seed: seed of the numpy generator.

    Returns:
        A `Task`.

    Example:

    >>> copy_task(length=4, num_train=1, num_validation=0, num_test=0).train
    [('i g f c', 'i g f c')]
    """,
)
reverse_task = _sequence_task_function(
    "reverse",
    lambda s: list(reversed(s)),
    """The target is the source in reverse order. Arguments as in `copy_task`.

    Example:

    >>> reverse_task(length=4, num_train=1, num_validation=0, num_test=0).train
    [('i g f c', 'c f g i')]
    """,
)
sort_task = _sequence_task_function(
    "sort",
    sorted,
    """The target is the source sorted in `ALPHABET` order. Arguments as in `copy_task`.

    Example:

    >>> sort_task(length=4, num_train=1, num_validation=0, num_test=0).train
    [('i g f c', 'c f g i')]
    """,
)


def recall_task(
    *,
    distance: int = 8,
    vocab_size: int = 10,
    length: int | tuple[int, int] | None = None,
    num_train: int = 2_000,
    num_validation: int = 200,
    num_test: int = 200,
    seed: int = 0,
) -> Task:
    """Long-range recall: the target is the symbol `distance` positions from the end.

    For a source of symbols `x[0] .. x[n-1]` the target is `x[n - distance]`,
    i.e. `source.split()[-distance]`: distance 1 is the last symbol.

    Args:
        distance: how far back from the end the answer sits (>= 1).
        vocab_size: number of symbols (2..52).
        length: source length, an int or inclusive `(min, max)` with
            `min >= distance`; default `(distance, distance + 8)`.
        num_train: number of training pairs.
        num_validation: number of validation pairs.
        num_test: number of test pairs.
        seed: seed of the numpy generator.

    Returns:
        A `Task` whose targets are one symbol each; `info["distance"]` records it.

    Example:

    >>> task = recall_task(distance=3, length=5, num_train=1, num_validation=0, num_test=0)
    >>> task.train
    [('i g f c d', 'f')]
    """
    check_positive_int("distance", distance)
    vocab_size = _check_vocab_size(vocab_size)
    if length is None:
        length = (distance, distance + 8)
    length = check_length_range("length", length)
    if length[0] < distance:
        raise UserInputError(
            f"length={length} allows sources shorter than distance={distance}; "
            f"use length=({distance}, {max(length[1], distance)}) or a smaller distance"
        )
    return _synthetic_task(
        "recall",
        lambda s: [s[-distance]],
        vocab_size=vocab_size,
        length=length,
        num_train=num_train,
        num_validation=num_validation,
        num_test=num_test,
        seed=seed,
        extra_info={"distance": distance},
    )
