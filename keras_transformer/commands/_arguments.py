"""argparse helpers of the commands: number types with ranges, a one-line error parser, and
help that shows every default."""

import argparse
import functools
import math
import re
import textwrap

from keras_transformer._validation import in_interval, interval


def float_flag(
    minimum: float,
    maximum: float | None = None,
    *,
    open_minimum: bool = False,
    open_maximum: bool = True,
):
    """An argparse `type=` for a finite float in `[minimum, maximum)` (ends per `open_*`): the
    range of `_validation.check_number`, worded for a flag.

    Example:
    >>> rate = float_flag(0.0, 1.0)
    >>> rate("0.1")
    0.1
    >>> rate("nan")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 'nan' is not a finite number; give a number in [0, 1).
    """
    ends = dict(open_minimum=open_minimum, open_maximum=open_maximum)
    span = interval(minimum, maximum, **ends)

    def fail(problem: str) -> argparse.ArgumentTypeError:
        return argparse.ArgumentTypeError(f"{problem}; give a number in {span}.")

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise fail(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise fail(f"{text!r} is not a finite number")
        if not in_interval(value, minimum, maximum, **ends):
            raise fail(f"{text} is outside {span}")
        return value

    parse.__name__ = "number"  # argparse names the type in its messages
    return parse


def int_flag(minimum: int):
    """An argparse `type=` for an integer >= `minimum`; argparse names the flag in the message.

    Example:
    >>> int_flag(1)("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 0 is less than 1; give an integer >= 1.
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not an integer; give an integer >= {minimum}."
            ) from None
        if value < minimum:
            raise argparse.ArgumentTypeError(
                f"{value} is less than {minimum}; give an integer >= {minimum}."
            )
        return value

    parse.__name__ = "integer"
    return parse


def duration(text: str) -> float:
    """An argparse `type=` for a duration (`_validation.parse_duration`): seconds, > 0.

    Example:
    >>> duration("1.5h")
    5400.0
    >>> duration("-5m")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: time budget '-5m' must be more than 0 seconds, e.g. 10m
    """
    from keras_transformer._validation import parse_duration
    from keras_transformer.errors import UserInputError

    try:
        return parse_duration(text)
    except UserInputError as error:  # the wording lives with the rule
        raise argparse.ArgumentTypeError(str(error)) from None


RATE = float_flag(0.0, 1.0)  # a rate in [0, 1): dropout, label smoothing
FRACTION = float_flag(0.0, 1.0, open_minimum=True)  # a share in (0, 1): validation, mask rate
POSITIVE = float_flag(0.0, None, open_minimum=True)  # a finite number > 0: learning rates
NON_NEGATIVE = float_flag(0.0, None)  # a finite number >= 0: beam search's length penalty


class OneLineArgumentParser(argparse.ArgumentParser):
    """Usage errors as one line on stderr (`PROG: error: MESSAGE (see PROG --help)`), exit 2,
    instead of argparse's whole usage: the command line promises one line per failure."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message.rstrip('.')} (see {self.prog} --help)\n")

    def parse_known_args(self, args=None, namespace=None):
        """As argparse, except that a value that starts with a minus and a digit (`-5m`,
        `-0.5x`) after an option that takes one is that option's value: argparse would take it
        for an option and answer "expected one argument" instead of saying what is wrong with
        the value."""
        if args is not None:
            args = self._join_negative_values(list(args))
        return super().parse_known_args(args, namespace)

    def _join_negative_values(self, args: list[str]) -> list[str]:
        takes_value = {
            flag
            for action in self._actions
            if action.option_strings and action.nargs is None
            for flag in action.option_strings
        }
        joined, i = [], 0
        while i < len(args):
            arg = args[i]
            if arg == "--":
                joined.extend(args[i:])
                break
            following = args[i + 1] if i + 1 < len(args) else ""
            if arg in takes_value and arg.startswith("--") and _NEGATIVE.match(following):
                joined.append(f"{arg}={following}")
                i += 2
                continue
            joined.append(arg)
            i += 1
        return joined


_NEGATIVE = re.compile(r"^-\d")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help that shows every option's default (`help_text`). A description or epilog written on
    one line is wrapped to the terminal; one written over several lines keeps them (tables)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        return help_text(action)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text.strip():
            return super()._fill_text(text, width, indent)
        return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent)


def add_search_options(p: argparse.ArgumentParser) -> None:
    """`--beam-size` and `--alpha`, the search options `translate` and `export` share."""
    p.add_argument(
        "--beam-size",
        type=int,
        default=None,
        help="beams searched; 1: greedy search (default: the search the run chose on its "
        "validation split, in RUN_DIR/decoding.json; greedy for a run without one)",
    )
    p.add_argument(
        "--alpha",
        type=NON_NEGATIVE,
        default=None,
        help="beam search length-penalty exponent, a finite number >= 0 (default: the run's "
        "choice, else 0.6)",
    )


def help_text(action: argparse.Action) -> str:
    """The help of `action` ending with its default: `action.default_text` (a string, or a
    function called when the help is shown, such as `config_defaults`), else its argparse
    default. Help that already names its default, flags without a value, positionals and
    required options are left as written.

    Example:
    >>> parser = argparse.ArgumentParser()
    >>> help_text(parser.add_argument("--size", type=int, default=3, help="how many"))
    'how many (default: 3)'
    """
    text = action.help or ""
    if action.help == argparse.SUPPRESS or "default" in text or action.nargs == 0:
        return text
    if not action.option_strings or action.required:
        return text
    shown = getattr(action, "default_text", None)
    if shown is None:
        if action.default in (None, argparse.SUPPRESS):
            return text
        value = action.default
        shown = " ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
    elif callable(shown):
        shown = shown()
    return f"{text} (default: {str(shown).replace('%', '%%')})"


def config_defaults(parser: argparse.ArgumentParser, describe) -> None:
    """Sets `default_text` of every option of `parser` that has none to `describe(dest)`,
    called only when the help is shown (a `train` option left out keeps its config's default,
    so the help reads it from the config class: it cannot drift)."""
    for action in parser._actions:
        if action.option_strings and getattr(action, "default_text", None) is None:
            action.default_text = functools.partial(describe, action.dest)


def dataclass_default(config_class, name: str) -> str:
    """The default of field `name` of the dataclass `config_class`, as the help shows it."""
    import dataclasses

    defaults = {field.name: field.default for field in dataclasses.fields(config_class)}
    value = defaults.get(name)
    return "none" if value is None else str(value)
