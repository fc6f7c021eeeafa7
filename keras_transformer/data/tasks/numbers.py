"""The "numbers" task: one integer written in words in two languages (num2words).

English "twenty-four" -> German "vierundzwanzig", French "quatre-vingt-dix-sept"
-> Spanish "noventa y siete": a small, offline, exactly-checkable translation task
with real morphology (German compounds, French vigesimal counting, accents).

Sampling. Integers are drawn *without replacement* from `0..max_number` with a
mixture that makes short and long numbers both common: half of the probability
mass is spread evenly over the digit counts (1-digit, 2-digit, ... numbers; a
log scale), the other half is uniform over the range. A uniform draw alone would
make almost every number six digits long (90% of 0..999,999), so the model would
rarely see "seven" or "forty-two". Concretely, the number of samples per digit
count is drawn from a multinomial over those masses, capped at how many numbers
have that digit count (only ten have one digit) with the excess redrawn over the
digit counts that still have room; within a digit count the numbers are drawn
uniformly without replacement. The numbers are then shuffled and cut into
train / validation / test, so the splits are disjoint *by number* and share one
distribution. Everything follows from `numpy.random.default_rng(seed)`.
"""

from __future__ import annotations

import numpy as np
from num2words import CONVERTER_CLASSES, num2words

from keras_transformer._validation import check_int, check_positive_int, check_seed
from keras_transformer.data.tasks.task import Task
from keras_transformer.errors import UserInputError

_MAX_SUPPORTED_NUMBER = 10**18 - 1  # digit buckets must fit numpy's int64


def supported_languages() -> tuple[str, ...]:
    """Language codes num2words can write numbers in (e.g. `"en"`, `"de"`, `"fr"`, `"es"`).

    Example:

    >>> {"en", "de", "fr", "es"} <= set(supported_languages())
    True
    """
    return tuple(sorted(CONVERTER_CLASSES))


def _check_language(name: str, lang: object, max_number: int) -> str:
    if not isinstance(lang, str) or lang not in CONVERTER_CLASSES:
        raise UserInputError(
            f"{name}={lang!r} is not a language num2words supports; "
            f"choose one of {list(supported_languages())}"
        )
    if not _writes(lang, max_number):
        # num2words' 'am' fails from 1100 on: say how far the language goes
        tops = (10**k - 1 for k in range(len(str(max_number)), 0, -1))
        top = next((number for number in tops if _writes(lang, number)), 0)
        raise UserInputError(
            f"{name}={lang!r} cannot write max_number={max_number} in words: num2words' "
            f"{lang!r} converter fails on it (it writes {top} but not {10 * top + 9}); choose "
            f"another language (--{name.replace('_', '-')}) or, in Python, "
            f"numbers_task(max_number={top})"
        )
    return lang


def _writes(lang: str, number: int) -> bool:
    try:
        return bool(num2words(number, lang=lang).strip())
    except (OverflowError, NotImplementedError, ValueError, TypeError, AttributeError):
        return False


def sample_numbers(count: int, max_number: int, rng: np.random.Generator) -> np.ndarray:
    """Draws `count` distinct integers from `0..max_number`, mixing short and long ones.

    See the module docstring for the mixture (half by digit count, half uniform).

    Args:
        count: how many distinct integers; at most `max_number + 1`.
        max_number: the largest integer that may be drawn.
        rng: a `numpy.random.Generator`.

    Returns:
        int64 array of shape `(count,)`, in random order.

    Example:

    >>> numbers = sample_numbers(100, 99, np.random.default_rng(0))
    >>> sorted(numbers.tolist()) == list(range(100))
    True
    """
    check_int("count", count, minimum=0)
    check_int("max_number", max_number, minimum=0)
    if count > max_number + 1:
        raise UserInputError(
            f"cannot draw count={count} distinct numbers from 0..max_number={max_number} "
            f"({max_number + 1} numbers); raise max_number or ask for fewer"
        )
    digits = len(str(max_number))
    lows = np.array([0] + [10 ** (d - 1) for d in range(2, digits + 1)], dtype=np.int64)
    highs = np.array([min(10**d - 1, max_number) for d in range(1, digits + 1)], dtype=np.int64)
    sizes = highs - lows + 1
    mass = 0.5 / digits + 0.5 * sizes.astype(np.float64) / float(max_number + 1)
    counts = np.zeros(digits, dtype=np.int64)
    remaining = count
    while remaining > 0:
        room = sizes - counts
        weights = np.where(room > 0, mass, 0.0)
        drawn = rng.multinomial(remaining, weights / weights.sum())
        taken = np.minimum(drawn, room)
        counts += taken
        remaining -= int(taken.sum())
    parts = [
        low + rng.choice(size, size=int(k), replace=False)
        for low, size, k in zip(lows, sizes, counts, strict=True)
        if k > 0
    ]
    numbers = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return rng.permutation(numbers.astype(np.int64))


def numbers_task(
    *,
    source_lang: str = "en",
    target_lang: str = "de",
    max_number: int = 999_999,
    num_train: int = 20_000,
    num_validation: int = 1_000,
    num_test: int = 1_000,
    seed: int = 0,
) -> Task:
    """Integers written in words in two languages, split by number.

    Args:
        source_lang: num2words language code of the source side, e.g. `"en"`.
        target_lang: num2words language code of the target side, e.g. `"de"`.
        max_number: largest integer (numbers are drawn from `0..max_number`).
        num_train: number of training pairs.
        num_validation: number of validation pairs.
        num_test: number of test pairs.
        seed: seed of the numpy generator; the same seed gives the same task.

    Returns:
        A `Task`; `task.info["numbers"][split]` lists the integers of each split.

    Example:

    >>> task = numbers_task(source_lang="en", target_lang="fr", max_number=99,
    ...                     num_train=8, num_validation=1, num_test=1)
    >>> len(task.train), len(task.test)
    (8, 1)
    >>> n = task.info["numbers"]["train"][0]
    >>> task.train[0] == (num2words(n, lang="en"), num2words(n, lang="fr"))
    True
    """
    check_int("max_number", max_number, minimum=0)
    if max_number > _MAX_SUPPORTED_NUMBER:
        raise UserInputError(f"max_number={max_number} must be <= {_MAX_SUPPORTED_NUMBER}")
    check_positive_int("num_train", num_train)
    check_int("num_validation", num_validation, minimum=0)
    check_int("num_test", num_test, minimum=0)
    check_seed(seed)
    _check_language("source_lang", source_lang, max_number)
    _check_language("target_lang", target_lang, max_number)
    total = num_train + num_validation + num_test
    if total > max_number + 1:
        raise UserInputError(
            f"num_train + num_validation + num_test = {total} distinct numbers do not fit in "
            f"0..max_number={max_number} ({max_number + 1} numbers); raise max_number or "
            "ask for fewer pairs"
        )
    numbers = sample_numbers(total, max_number, np.random.default_rng(seed)).tolist()
    cuts = {
        "train": numbers[:num_train],
        "validation": numbers[num_train : num_train + num_validation],
        "test": numbers[num_train + num_validation :],
    }
    pairs = {
        split: [(num2words(n, lang=source_lang), num2words(n, lang=target_lang)) for n in values]
        for split, values in cuts.items()
    }
    return Task(
        name="numbers",
        source_lang=source_lang,
        target_lang=target_lang,
        train=pairs["train"],
        validation=pairs["validation"],
        test=pairs["test"],
        info={"numbers": cuts, "max_number": max_number, "seed": seed},
    )
