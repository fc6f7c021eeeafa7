"""What several test files share: config round trip and .keras save/load, small sizes, ids,
corpora and the tokenizer round trip. Imports no TensorFlow at the top (the layer and model
tests also run under JAX)."""

from __future__ import annotations

import inspect
import itertools

import keras
import numpy as np

# A tiny parallel corpus for untrained run directories (fixture `tiny_run`).
TINY_MODEL_ARGS = "--num-layers 1 --d-model 16 --num-heads 2 --dff 32".split()
"""The smallest model the command-line tests train (seconds a run)."""

TINY_RUN_ARGS = [*TINY_MODEL_ARGS, *"--batch-size 32 --max-length 24 --warmup-steps 20".split()]
"""The smallest model with the batch, length and warm-up of the quick command-line runs."""

SMALL_MODEL_ARGS = "--num-layers 1 --d-model 32 --num-heads 2 --dff 64".split()
"""One layer of width 32: the command-line runs that must learn something (continued runs, the
dual encoder, budget runs)."""

TINY_SOURCES = ["one two three", "four five", "six seven eight nine", "ten", "two four six"]
TINY_TARGETS = ["un deux trois", "quatre cinq", "six sept huit neuf", "dix", "deux quatre six"]
TINY_MAX_LENGTH = 10

SMALL_MODEL = dict(num_layers=2, d_model=16, num_heads=2, dff=32, max_length=32)
"""The sizes of the model-builder tests: two layers, two heads, seconds to build and save."""


RUN_FILES = ("model.keras", "config.json", "history.csv", "metrics.json", "plots/history.png")
"""What every finished run directory holds (`assert_files_written` adds each run's own)."""


def assert_files_written(run_dir, names) -> None:
    """Each of `names` (paths inside `run_dir`) is a file with content."""
    for name in names:
        path = run_dir / name
        assert path.is_file() and path.stat().st_size > 0, name


def repeated_corpus(num_pairs: int, source_words: int = 10, target_words: int = 12):
    """`num_pairs` copies of one pair of `source_words` and `target_words` distinct words: a
    corpus whose statistics (pairs, words, types, lengths) are known exactly."""
    source = " ".join(f"s{i}" for i in range(source_words))
    target = " ".join(f"t{i}" for i in range(target_words))
    return [(source, target)] * num_pairs


def decoded(tensor) -> list[str]:
    """A string tensor `(batch,)` as Python strings."""
    return [s.decode("utf-8") for s in tensor.numpy().tolist()]


def round_trip_module(tokenizer):
    """A `tf.Module` whose call is `detokenize(tokenize(strings))` in one traced graph, to save
    as a SavedModel and reload: what a server runs."""
    import tensorflow as tf

    class RoundTrip(tf.Module):
        def __init__(self, tokenizer):
            super().__init__()
            self.tokenizer = tokenizer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def __call__(self, strings):
            return self.tokenizer.detokenize(self.tokenizer.tokenize(strings))

    return RoundTrip(tokenizer)


def assert_config_round_trip(layer: keras.layers.Layer, **arguments) -> None:
    """`get_config()` keeps every constructor argument and `from_config` rebuilds it.

    Checked against the constructor, not only against itself: every named
    parameter of `__init__` must be a key of the config (an argument that
    `get_config` drops fails here), each of `arguments` (the values the layer
    was built with) must be in the config with that value, and the clone built
    `from_config` must give the same config and keep the same values.
    """
    config = layer.get_config()
    cls = type(layer)
    parameters = [
        name
        for name, parameter in inspect.signature(cls.__init__).parameters.items()
        if name != "self"
        and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
    ]
    dropped = [name for name in parameters if name not in config]
    assert not dropped, f"{cls.__name__}.get_config() drops constructor arguments {dropped}"
    clone = cls.from_config(config)
    clone_config = clone.get_config()
    for name, value in arguments.items():
        for where, got in (
            ("get_config()", config),
            ("from_config(...).get_config()", clone_config),
        ):
            assert name in got, f"{cls.__name__}.{where} drops {name!r}"
            assert _same_argument(got[name], value), (
                f"{cls.__name__}.{where}[{name!r}] is {got[name]!r}; built with {value!r}"
            )
    assert clone_config == config


def _same_argument(stored, given) -> bool:
    """A config value equals the constructor argument (activations and initializers by name)."""
    if stored == given:
        return True
    if isinstance(given, tuple) and list(given) == stored:
        return True
    serialized = keras.saving.serialize_keras_object(given)
    if stored == serialized:
        return True
    name = getattr(given, "__name__", None)
    return name is not None and stored in (name, {"class_name": "function", "config": name})


def assert_save_load_identical(model: keras.Model, inputs, path) -> None:
    """Saving to .keras and loading with safe_mode=True reproduces the outputs."""
    expected = model(inputs, training=False)
    file = str(path / "model.keras")
    model.save(file)
    loaded = keras.models.load_model(file, safe_mode=True)
    got = loaded(inputs, training=False)
    keras.tree.map_structure(
        lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-6),
        expected,
        got,
    )
    assert loaded.count_params() == model.count_params()


def random_ids(rng, batch, length, vocab, pad_from=None):
    """Int ids in [1, vocab) with optional padding (0) from `pad_from[b]` on."""
    ids = rng.integers(1, vocab, size=(batch, length)).astype("int32")
    if pad_from is not None:
        for b, start in enumerate(pad_from):
            ids[b, start:] = 0
    return ids


def compiled(fn):
    """`fn` traced and compiled by the running backend: `tf.function` on TensorFlow,
    `jax.jit` on JAX; on PyTorch (no graph mode worth a test's time) `fn` itself.

    Lets one test check "eagerly, compiled, and through predict" on every backend without
    importing TensorFlow where it is not the backend.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(fn)
    if backend == "jax":
        import jax

        return jax.jit(fn)
    return fn


_PROBE_NUMBERS = itertools.count()


def retracing_warnings(make_instances) -> list[str]:
    """TensorFlow's "triggered tf.function retracing" warnings while `make_instances()` runs
    (each instance traced once: the package drops them, `_quiet.OneTracePerInstance`), after
    checking that a function that really retraces is still reported."""
    import logging

    import tensorflow as tf

    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    handler = Keep()
    tf_logger = tf.get_logger()
    level = tf_logger.level  # an in-process command of an earlier test leaves it at ERROR
    tf_logger.setLevel(logging.WARNING)
    tf_logger.addHandler(handler)
    try:
        make_instances()
        found = [r for r in records if "retracing" in r]

        # TensorFlow warns at most twice per function (keyed by its code object), so each call
        # probes with a function of its own: the same probe would be silent the second time.
        name = f"retraces_{next(_PROBE_NUMBERS)}"
        namespace = {}
        exec(f"def {name}(x):\n    return x + 1", namespace)
        retraces = tf.function(namespace[name])
        for length in range(1, 9):  # a new shape each call: a real retrace every time
            retraces(np.zeros(length, "float32"))
        assert [r for r in records if "retracing" in r and name in r]
        return found
    finally:
        tf_logger.removeHandler(handler)
        tf_logger.setLevel(level)
