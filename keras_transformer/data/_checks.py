"""The data file readers' name for `keras_transformer._validation`'s integer checks.

The checks are `_validation`'s (one message each); this module only keeps the import of
`tasks/tsv.py` and `tasks/imdb.py` working, whose counts may be 0 (`check_int`'s `minimum`
defaults to 0 here). New code imports `keras_transformer._validation`.
"""

from typing import Any

from keras_transformer import _validation
from keras_transformer._validation import check_seed, is_int

__all__ = ["check_int", "check_seed", "is_int"]


def check_int(name: str, value: Any, *, minimum: int = 0) -> int:
    """`_validation.check_int` for counts that may be 0 (`minimum=0` by default)."""
    return _validation.check_int(name, value, minimum=minimum)
