"""Names of a subpackage loaded on first use (PEP 562), so that light modules beside them
(configs, choices) import without Keras or TensorFlow."""

import importlib
from collections.abc import Callable


def lazy_names(
    package: str, homes: dict[str, str], namespace: dict
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose name `n` lives in `package.homes[n]`.

    Example:
    >>> getattr_, dir_ = lazy_names("keras_transformer.models", {"TransformerConfig": "config"}, {})
    >>> getattr_("TransformerConfig").__name__
    'TransformerConfig'
    >>> dir_()
    ['TransformerConfig']
    """

    def __getattr__(name: str):
        if name in homes:
            value = getattr(importlib.import_module(f"{package}.{homes[name]}"), name)
            namespace[name] = value  # later look-ups skip this function
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
