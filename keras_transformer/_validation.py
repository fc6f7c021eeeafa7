"""Value checks of the package: one function per kind of value, one message each.

A value of the wrong type raises `TypeError`; a value of the right type outside its range
raises `UserInputError` (a `ValueError`: the command line reports it as a usage error). Each message names the argument, the value received and what to pass.
Every layer, config and data function checks its arguments here (the command line's argparse
types in `commands/_arguments.py` share `interval` and `in_interval`).
"""

import math
import numbers
import re
from typing import Any

from keras_transformer.errors import UserInputError


def is_int(value: Any) -> bool:
    """True for a Python or NumPy integer that is not a bool (`True` is an int to Python, never
    a size here).

    Example:
    >>> [is_int(v) for v in (0, 7, True, 1.0, "3", None)]
    [True, True, False, False, False, False]
    """
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_int(name: str, value: Any, *, minimum: int | None = 1, hint: str = "") -> int:
    """Returns `value` if it is an int (not a bool) `>= minimum` (None: any int); `hint` ends
    the messages. Counts that may be 0 pass `minimum=0`.

    Raises:
        TypeError: `value` is not an int.
        ValueError: `value < minimum`.

    Example:
    >>> check_int("num_layers", 2)
    2
    >>> check_int("num_layers", 0)
    Traceback (most recent call last):
    ...
    keras_transformer.errors.UserInputError: num_layers must be a positive integer; received num_layers=0.
    >>> check_int("max_length", 2, minimum=3)
    Traceback (most recent call last):
    ...
    keras_transformer.errors.UserInputError: max_length must be an integer >= 3; received max_length=2.
    """
    if not is_int(value):
        raise TypeError(f"{name} must be an integer; received {name}={value!r}.{hint}")
    if minimum is not None and value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise UserInputError(f"{name} must be {kind}; received {name}={value!r}.{hint}")
    return int(value)


def check_positive_int(name: str, value: Any) -> int:
    """Returns `value` if it is an int > 0 (`TypeError` / `ValueError` otherwise)."""
    return check_int(name, value, minimum=1)


class InvalidArgumentType(TypeError, ValueError):
    """A size of the wrong type: a TypeError, as everywhere in the package, and also the
    ValueError keras.layers.MultiHeadAttention raises (Keras's own tests expect it)."""


def check_size(name: str, value: Any, expected: str = "a positive integer") -> int:
    """A layer's size (`num_heads`, `key_dim`, `value_dim`) in Keras's wording, so that a Keras
    user (and Keras's tests) recognise the error: `InvalidArgumentType` for another type,
    `UserInputError` (a `ValueError`) for a value <= 0."""
    wrong_type = isinstance(value, bool) or not isinstance(value, int)
    if wrong_type or value <= 0:
        error = InvalidArgumentType if wrong_type else UserInputError
        raise error(
            f"Received an invalid value for argument `{name}`, expected {expected}. "
            f"Received: {name}={value!r}"
        )
    return value


def check_num_heads(value: Any) -> int:
    """The one head-count rule (layers, blocks, model configs): a positive int (`check_size`).
    Whether it divides `d_model` is `check_divisible`'s."""
    return check_size("num_heads", value)


MIN_LENGTH = 3
"""The shortest `max_length` anywhere (training, decoding, sentence vectors): a framed sequence
holds `[START]`, one piece and `[END]`."""


def check_max_length(value: Any, *, name: str = "max_length", hint: str = "") -> int:
    """Returns `value` if it is an int >= `MIN_LENGTH` (`TypeError` / `ValueError` otherwise).

    Example:
    >>> check_max_length(2)
    Traceback (most recent call last):
    ...
    keras_transformer.errors.UserInputError: max_length must be an integer >= 3; received max_length=2. It counts [START], one piece and [END].
    """
    return check_int(name, value, minimum=MIN_LENGTH, hint=hint or _LENGTH_HINT)


_LENGTH_HINT = " It counts [START], one piece and [END]."


def check_alpha(value: Any) -> float:
    """Returns the length penalty `value` (a number >= 0) as a float."""
    hint = " 0 ranks finished beams by their summed log-probability; 0.6 is the usual choice."
    return check_number("alpha", value, 0.0, hint=hint)


def check_beam_size(value: Any) -> int:
    """Returns `value` if it is an integer >= 1, else raises `UserInputError` (a `ValueError`,
    as a negative `alpha` does, through the Python API and the command line alike)."""
    if not is_int(value) or value < 1:
        raise UserInputError(
            f"beam_size must be an integer >= 1 (1 = greedy search); received beam_size={value!r}."
        )
    return int(value)


def check_seed(value: Any) -> int:
    """A seed is an int >= 0 (NumPy's `default_rng` rejects negatives)."""
    return check_int("seed", value, minimum=0)


def check_length_range(name: str, value: Any, *, minimum: int = 1) -> tuple[int, int]:
    """Returns `(low, high)` from an int `n` (meaning `(n, n)`) or a pair of ints, inclusive,
    `minimum <= low <= high`.

    Example:
    >>> check_length_range("length", 4), check_length_range("length", [2, 5])
    ((4, 4), (2, 5))
    >>> check_length_range("length", (5, 2))
    Traceback (most recent call last):
    ...
    keras_transformer.errors.UserInputError: length must be an int or a (min, max) pair with 1 <= min <= max, e.g. (4, 8); received length=(5, 2).
    """
    pair = (value, value) if is_int(value) else value
    kind = f"an int or a (min, max) pair with {minimum} <= min <= max, e.g. (4, 8)"
    if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not all(map(is_int, pair)):
        raise TypeError(f"{name} must be {kind}; received {name}={value!r}.")
    low, high = pair
    if low < minimum or high < low:
        raise UserInputError(f"{name} must be {kind}; received {name}={tuple(pair)!r}.")
    return int(low), int(high)


def check_number(
    name: str,
    value: Any,
    minimum: float | None = None,
    maximum: float | None = None,
    *,
    open_minimum: bool = False,
    open_maximum: bool = True,
    hint: str = "",
) -> float:
    """Returns `value` as a float if it is a finite real number (not a bool) in range.

    The range is `[minimum, maximum)` by default; `open_minimum` / `open_maximum` choose the
    ends, `None` leaves a side unbounded.

    Raises:
        TypeError: `value` is not a real number.
        ValueError: `value` is not finite or outside the range.

    Example:
    >>> check_number("learning_rate", 1e-3, 0.0, open_minimum=True)
    0.001
    >>> check_number("dropout", 1.0, 0.0, 1.0)
    Traceback (most recent call last):
    ...
    keras_transformer.errors.UserInputError: dropout must be a number in [0, 1); received dropout=1.0.
    """
    ends = dict(open_minimum=open_minimum, open_maximum=open_maximum)
    span = interval(minimum, maximum, **ends)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number in {span}; received {name}={value!r}.{hint}")
    if not in_interval(value, minimum, maximum, **ends):
        raise UserInputError(f"{name} must be a number in {span}; received {name}={value!r}.{hint}")
    return float(value)


def interval(
    minimum: float | None,
    maximum: float | None = None,
    *,
    open_minimum: bool = False,
    open_maximum: bool = True,
) -> str:
    """The range `[minimum, maximum)` as the messages write it (`None`: unbounded).

    Example:
    >>> interval(0.0, 1.0), interval(0.0, None, open_minimum=True), interval(0, 1, open_maximum=False)
    ('[0, 1)', '(0, inf)', '[0, 1]')
    """
    low = "(-inf" if minimum is None else f"{'(' if open_minimum else '['}{minimum:g}"
    high = "inf)" if maximum is None else f"{maximum:g}{')' if open_maximum else ']'}"
    return f"{low}, {high}"


def in_interval(
    value: float,
    minimum: float | None,
    maximum: float | None = None,
    *,
    open_minimum: bool = False,
    open_maximum: bool = True,
) -> bool:
    """True if `value` is finite and inside `interval(minimum, maximum, ...)`."""
    below = minimum is not None and (value <= minimum if open_minimum else value < minimum)
    above = maximum is not None and (value >= maximum if open_maximum else value > maximum)
    return math.isfinite(value) and not below and not above


def check_rate(name: str, value: Any) -> float:
    """Returns `value` if it is a number in [0, 1) (dropout, label smoothing)."""
    return check_number(name, value, 0.0, 1.0, hint=" Use 0.0 to disable it.")


def check_probability(name: str, value: Any) -> float:
    """Returns `value` if it is a number in [0, 1] (a share of tokens, which may be all)."""
    return check_number(name, value, 0.0, 1.0, open_maximum=False)


def check_divisible(d_model: int, num_heads: int, *, flags: bool = False) -> None:
    """Raise `ValueError` unless `d_model` splits evenly into `num_heads` heads; the message
    names the nearest sizes that do (`flags`: worded for the command line's `--d-model` and
    `--num-heads`).

    Example:
    >>> check_divisible(130, 4)
    Traceback (most recent call last):
    ...
    keras_transformer.errors.UserInputError: d_model=130 must be divisible by num_heads=4 (each head gets d_model / num_heads dimensions); use d_model=128 or 132, or num_heads=2, 5 or 10, or pass key_dim explicitly.
    >>> check_divisible(130, 4, flags=True)
    Traceback (most recent call last):
    ...
    keras_transformer.errors.UserInputError: --d-model 130 is not divisible by --num-heads 4 (each head gets d_model / num_heads dimensions); use --d-model 128 or 132, or --num-heads 2, 5 or 10.
    """
    if d_model % num_heads == 0:
        return
    lower = d_model - d_model % num_heads
    sizes = " or ".join(str(n) for n in (lower, lower + num_heads) if n > 0)
    divisors = [n for n in range(2, d_model + 1) if d_model % n == 0] or [1]
    heads = sorted(sorted(divisors, key=lambda n: (abs(n - num_heads), n))[:3])
    heads_text = ", ".join(map(str, heads[:-1])) + (" or " if len(heads) > 1 else "")
    heads_text += str(heads[-1])
    why = "(each head gets d_model / num_heads dimensions)"
    if flags:
        raise UserInputError(
            f"--d-model {d_model} is not divisible by --num-heads {num_heads} {why}; use "
            f"--d-model {sizes}, or --num-heads {heads_text}."
        )
    raise UserInputError(
        f"d_model={d_model} must be divisible by num_heads={num_heads} {why}; use "
        f"d_model={sizes}, or num_heads={heads_text}, or pass key_dim explicitly."
    )


def check_choice(name: str, value: Any, choices) -> Any:
    """Returns `value` if it is one of `choices`, else `ValueError` listing them."""
    if value not in choices:
        listed = ", ".join(repr(choice) for choice in choices)
        raise UserInputError(f"{name}={value!r} is not supported; use one of {listed}.")
    return value


_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_DURATION = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*(s|m|min|h|)\s*$")


def parse_duration(text: str | float | int) -> float:
    """Seconds in a duration such as `"90"`, `"90s"`, `"10m"`, `"1.5h"` (a number is seconds).

    Example:
    >>> parse_duration("10m"), parse_duration("90s"), parse_duration(45)
    (600.0, 90.0, 45.0)
    """
    if isinstance(text, numbers.Real) and not isinstance(text, bool):
        seconds = float(text)
    else:
        match = _DURATION.match(str(text)) if isinstance(text, str) else None
        if match is None:
            raise UserInputError(
                f"time budget {text!r} is not a duration; write e.g. 90s, 10m or 1.5h"
            )
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if not math.isfinite(seconds) or seconds <= 0:
        raise UserInputError(f"time budget {text!r} must be more than 0 seconds, e.g. 10m")
    return seconds
