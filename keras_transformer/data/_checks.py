"""Argument checks of the data modules that `keras_transformer._validation` does not cover.

Positive ints are checked with `_validation.check_positive_int`; these cover the
other bounds (counts that may be 0, seeds, `max_length >= 3`) and length ranges.
As in `_validation`, a wrong type is a `TypeError` and a wrong value a
`ValueError`; each error names the argument and the value received.
"""

from __future__ import annotations

from typing import Any


def is_int(value: Any) -> bool:
    """True for an int that is not a bool (`True` is an int to Python, never a size here)."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_int(name: str, value: Any, *, minimum: int = 0) -> int:
    """Returns `value` if it is an int `>= minimum`, else raises (for `minimum=1`, use
    `_validation.check_positive_int`)."""
    if not is_int(value):
        raise TypeError(f"{name}={value!r} must be an int")
    if value < minimum:
        raise ValueError(f"{name}={value} must be >= {minimum}")
    return value


def check_seed(value: Any) -> int:
    """A seed is a non-negative int (numpy's `default_rng` rejects negatives)."""
    return check_int("seed", value, minimum=0)


def check_length_range(name: str, value: Any, *, minimum: int = 1) -> tuple[int, int]:
    """Accepts an int `n` (meaning `(n, n)`) or a pair `(low, high)`, inclusive."""
    if is_int(value):
        value = (value, value)
    if not isinstance(value, (tuple, list)) or len(value) != 2 or not all(map(is_int, value)):
        raise TypeError(
            f"{name}={value!r} must be an int or a (min, max) pair of ints, e.g. (4, 8)"
        )
    low, high = value
    if low < minimum or high < low:
        raise ValueError(f"{name}={tuple(value)} must satisfy {minimum} <= min <= max, e.g. (4, 8)")
    return int(low), int(high)
