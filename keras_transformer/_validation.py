"""Value checks of the package: one function per kind of value, one message each.

A value of the wrong type raises `TypeError`; a value of the right type outside its range
raises `ValueError`. Each message names the argument, the value received and what to pass.
"""

import math
import numbers
import re
from typing import Any


def check_int(name: str, value: Any, *, minimum: int | None = 1, hint: str = "") -> int:
    """Returns `value` if it is an int (not a bool) `>= minimum` (None: any int); `hint` ends
    the messages.

    Raises:
        TypeError: `value` is not an int.
        ValueError: `value < minimum`.

    Example:
    >>> check_int("num_layers", 2)
    2
    >>> check_int("num_layers", 0)
    Traceback (most recent call last):
    ...
    ValueError: num_layers must be a positive integer; received num_layers=0.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer; received {name}={value!r}.{hint}")
    if minimum is not None and value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{name} must be {kind}; received {name}={value!r}.{hint}")
    return int(value)


def check_positive_int(name: str, value: Any) -> int:
    """Returns `value` if it is an int > 0 (`TypeError` / `ValueError` otherwise)."""
    return check_int(name, value, minimum=1)


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
    ValueError: dropout must be a number in [0, 1); received dropout=1.0.
    """
    low = "(-inf" if minimum is None else f"{'(' if open_minimum else '['}{minimum:g}"
    high = "inf)" if maximum is None else f"{maximum:g}{')' if open_maximum else ']'}"
    span = f"{low}, {high}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number in {span}; received {name}={value!r}.{hint}")
    below = minimum is not None and (value <= minimum if open_minimum else value < minimum)
    above = maximum is not None and (value >= maximum if open_maximum else value > maximum)
    if not math.isfinite(value) or below or above:
        raise ValueError(f"{name} must be a number in {span}; received {name}={value!r}.{hint}")
    return float(value)


def check_rate(name: str, value: Any) -> float:
    """Returns `value` if it is a number in [0, 1) (dropout, label smoothing)."""
    return check_number(name, value, 0.0, 1.0, hint=" Use 0.0 to disable it.")


def check_divisible(d_model: int, num_heads: int) -> None:
    """Raise `ValueError` unless `d_model` splits evenly into `num_heads` heads."""
    if d_model % num_heads:
        raise ValueError(
            f"d_model={d_model} must be divisible by num_heads={num_heads}; pick "
            f"num_heads among the divisors of d_model or pass key_dim explicitly."
        )


def check_choice(name: str, value: Any, choices) -> Any:
    """Returns `value` if it is one of `choices`, else `ValueError` listing them."""
    if value not in choices:
        listed = ", ".join(repr(choice) for choice in choices)
        raise ValueError(f"{name}={value!r} is not supported; use one of {listed}.")
    return value


_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|)\s*$")


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
            raise ValueError(f"time budget {text!r} is not a duration; write e.g. 90s, 10m or 1.5h")
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"time budget {text!r} must be more than 0 seconds, e.g. 10m")
    return seconds
