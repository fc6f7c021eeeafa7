"""argparse helpers of the commands: number types with ranges, and a one-line error parser."""

import argparse
import math


def float_flag(minimum: float, maximum: float | None = None, *, open_minimum: bool = False,
               open_maximum: bool = True):  # fmt: skip
    """An argparse `type=` for a finite float in `[minimum, maximum)` (ends per `open_*`).

    Example:
    >>> rate = float_flag(0.0, 1.0)
    >>> rate("0.1")
    0.1
    >>> rate("nan")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 'nan' is not a finite number; give a number in [0.0, 1.0).
    """
    low, high = "(" if open_minimum else "[", ")" if open_maximum else "]"
    span = f"{low}{minimum}, inf)" if maximum is None else f"{low}{minimum}, {maximum}{high}"

    def fail(problem: str) -> argparse.ArgumentTypeError:
        return argparse.ArgumentTypeError(f"{problem}; give a number in {span}.")

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise fail(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise fail(f"{text!r} is not a finite number")
        below = value <= minimum if open_minimum else value < minimum
        above = maximum is not None and (value >= maximum if open_maximum else value > maximum)
        if below or above:
            raise fail(f"{text} is outside {span}")
        return value

    parse.__name__ = "number"  # argparse names the type in its messages
    return parse


RATE = float_flag(0.0, 1.0)  # a rate in [0, 1): dropout, label smoothing
FRACTION = float_flag(0.0, 1.0, open_minimum=True)  # a share in (0, 1): validation, mask rate
POSITIVE = float_flag(0.0, None, open_minimum=True)  # a finite number > 0: learning rates
NON_NEGATIVE = float_flag(0.0, None)  # a finite number >= 0: beam search's length penalty


class OneLineArgumentParser(argparse.ArgumentParser):
    """Usage errors as one line on stderr (`PROG: error: MESSAGE (see PROG --help)`), exit 2,
    instead of argparse's whole usage: the command line promises one line per failure."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message.rstrip('.')} (see {self.prog} --help)\n")
