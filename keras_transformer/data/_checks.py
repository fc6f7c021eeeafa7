"""Argument checks shared by the task loaders; each error names the argument and value."""

from __future__ import annotations

from typing import Any


def check_int(name: str, value: Any, *, minimum: int = 0) -> int:
    """Returns `value` if it is an int (not a bool) `>= minimum`, else raises."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}={value!r} must be an int")
    if value < minimum:
        raise ValueError(f"{name}={value} must be >= {minimum}")
    return value


def check_seed(value: Any) -> int:
    """A seed is a non-negative int (numpy's `default_rng` rejects negatives)."""
    return check_int("seed", value, minimum=0)


def check_length_range(name: str, value: Any, *, minimum: int = 1) -> tuple[int, int]:
    """Accepts an int `n` (meaning `(n, n)`) or a pair `(low, high)`, inclusive."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value, value)
    if (
        not isinstance(value, (tuple, list))
        or len(value) != 2
        or any(isinstance(v, bool) or not isinstance(v, int) for v in value)
    ):
        raise TypeError(
            f"{name}={value!r} must be an int or a (min, max) pair of ints, e.g. (4, 8)"
        )
    low, high = value
    if low < minimum or high < low:
        raise ValueError(f"{name}={tuple(value)} must satisfy {minimum} <= min <= max, e.g. (4, 8)")
    return int(low), int(high)
