"""`import keras_transformer` is enough for `keras.models.load_model`, without importing Keras.

Keras finds a saved custom object by its registered name ("keras_transformer>AddNorm") in a
registry that the `@keras.saving.register_keras_serializable` decorators fill when their modules
are imported. The package imports no Keras or TensorFlow at import (`keras-transformer --help`
stays fast), so `after_keras_import(register)` runs `register` as soon as Keras is imported:
at once if it already is, else right after the `keras` module finishes loading (an import hook
that removes itself). Nothing can be loaded before Keras is imported, so no load misses it.
The same hook keeps TensorFlow's native start-up lines off stderr when Keras imports it
(`_quiet.native_lines_hidden`).
"""

import importlib.abc
import logging
import re
import sys
from collections.abc import Callable

__all__ = ["after_keras_import", "missing_class_hint"]

_logger = logging.getLogger("keras_transformer")


def after_keras_import(callback: Callable[[], None]) -> None:
    """Calls `callback()` once Keras is imported: now if it is (fully loaded), else right after
    `import keras` finishes, wherever that import comes from (TensorFlow imports Keras too)."""
    keras = sys.modules.get("keras")
    if keras is not None and not _initializing(keras):
        if "tensorflow" in sys.modules:  # imported before this package: its import's lines
            from keras_transformer._quiet import import_tensorflow_quietly  # are written, but

            import_tensorflow_quietly()  # not CUDA's "failed call to cuInit" of the first probe
        _call_safely(callback)
    elif not any(isinstance(finder, _AfterKeras) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterKeras(callback))


def _initializing(module) -> bool:
    spec = getattr(module, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


def _call_safely(callback: Callable[[], None]) -> None:
    """A failure here must never break `import keras`: `load_model` then names the fix
    (`missing_class_hint`)."""
    try:
        callback()
    except Exception as error:  # noqa: BLE001 - reported, and `kt.register()` retries it
        _logger.warning(
            "keras_transformer could not register its Keras objects (%s: %s); call "
            "keras_transformer.register() before keras.models.load_model.",
            type(error).__name__,
            error,
        )


class _AfterKeras(importlib.abc.MetaPathFinder):
    """Finds `keras` with the other finders and calls `callback` after its module has run."""

    def __init__(self, callback: Callable[[], None]):
        self.callback = callback
        self.finding = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "keras" or self.finding:
            return None
        self.finding = True
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self.finding = False
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _CallAfterLoading(spec.loader, self)
        return spec


class _CallAfterLoading(importlib.abc.Loader):
    """The `keras` loader, then the callback; the module keeps its own loader."""

    def __init__(self, loader, finder: _AfterKeras):
        self.loader, self.finder = loader, finder

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        from keras_transformer import _quiet

        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        if "tensorflow" in sys.modules:
            self.loader.exec_module(module)
        else:  # Keras imports TensorFlow: its native start-up lines stay off stderr (`_quiet`)
            with _quiet.native_lines_hidden():
                self.loader.exec_module(module)
            if "tensorflow" in sys.modules:
                _quiet.import_tensorflow_quietly()  # probes the devices quietly once
                _quiet.quiet_python_loggers()
        if self.finder in sys.meta_path:
            sys.meta_path.remove(self.finder)
        _call_safely(self.finder.callback)


_NOT_FOUND = re.compile(r"Could not locate (?:class|function) '([^']+)'")


def missing_class_hint(error: BaseException) -> str | None:
    """The fix for a `load_model` error caused by a keras_transformer class Keras could not
    find, else None.

    Example:
    >>> error = TypeError("Could not locate class 'AddNorm'. Make sure ... Full object config: "
    ...                   "{'module': 'keras_transformer.layers.add_norm', 'class_name': 'AddNorm'}")
    >>> print(missing_class_hint(error))  # doctest: +ELLIPSIS
    the model uses keras_transformer's 'AddNorm', which this process has not registered: ...
    """
    text = str(error)
    found = _NOT_FOUND.search(text)
    if found is None or "keras_transformer" not in text:
        return None
    from keras_transformer import __version__

    return (
        f"the model uses keras_transformer's {found.group(1)!r}, which this process has not "
        "registered: `import keras_transformer` before `keras.models.load_model` (or call "
        f"keras_transformer.register()); if it was imported, the model was saved by a "
        f"keras_transformer other than this {__version__} that has no such class: install that "
        "version."
    )
