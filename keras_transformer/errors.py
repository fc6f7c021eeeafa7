"""Error types of the package: what the command line reports as one line.

`UserInputError` marks a problem the user can fix (a bad value, file or run
directory). The command line prints it, and the other user errors listed in
`keras_transformer.cli` (`ValueError`, `OSError`, TensorFlow's `OpError`), as
one line on stderr with exit status 2; so is `MissingExtraError` (an optional
dependency is not installed). Any other exception is an internal error: a
traceback and exit status 3.
"""

from __future__ import annotations


class UserInputError(ValueError):
    """A value, file or run directory given by the user cannot be used; the message says why."""


class DamagedRunError(UserInputError):
    """A run directory exists but one of its files is damaged (truncated, not the expected JSON)."""


class MissingExtraError(ImportError):
    """An optional dependency is missing; the message names the `pip install` that adds it."""
