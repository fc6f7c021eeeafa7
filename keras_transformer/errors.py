"""Error types the command line reports as one line on stderr, exit status 2 (as the
others `keras_transformer.cli.user_error` lists; any other exception is a bug: 3)."""


class UserInputError(ValueError):
    """A value, file or run directory given by the user cannot be used; the message says why."""


class DamagedRunError(UserInputError):
    """A run directory exists but one of its files is damaged (truncated, not the expected JSON)."""


class MissingExtraError(ImportError):
    """An optional dependency is missing; the message names the `pip install` that adds it."""


class OldWeightsLayoutError(UserInputError):
    """A model saved by an older keras_transformer whose layers stored their weights under other
    names; the message names the version and what to do."""
