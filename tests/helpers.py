"""Assertions reused across test files: config round trip and .keras save/load."""

from __future__ import annotations

import keras
import numpy as np

# A tiny parallel corpus for untrained run directories (fixture `tiny_run`).
TINY_SOURCES = ["one two three", "four five", "six seven eight nine", "ten", "two four six"]
TINY_TARGETS = ["un deux trois", "quatre cinq", "six sept huit neuf", "dix", "deux quatre six"]
TINY_MAX_LENGTH = 10


def assert_config_round_trip(layer: keras.layers.Layer) -> None:
    """`from_config(get_config())` gives an equal config (every argument kept)."""
    config = layer.get_config()
    clone = layer.__class__.from_config(config)
    assert clone.get_config() == config


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
