"""Configs keep every constructor argument: the helper itself, and pre-LN / GELU models saved and loaded."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_transformer.layers import AddNorm, DecoderLayer, EncoderLayer, FeedForward
from keras_transformer.models import TransformerConfig, build_transformer
from tests.helpers import assert_config_round_trip, assert_save_load_identical, random_ids


class _DropsAnArgument(keras.layers.Layer):
    def __init__(self, units: int, scale: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self.units, self.scale = units, scale

    def get_config(self):
        return {**super().get_config(), "units": self.units}  # `scale` dropped


class _ForgetsAValue(_DropsAnArgument):
    def get_config(self):
        return {**super().get_config(), "scale": 1.0}  # the key is there, the value is not


def test_helper_fails_when_get_config_drops_an_argument():
    with pytest.raises(AssertionError, match="drops constructor arguments \\['scale'\\]"):
        assert_config_round_trip(_DropsAnArgument(3, scale=2.0))
    with pytest.raises(AssertionError, match="built with 2.0"):
        assert_config_round_trip(_ForgetsAValue(3, scale=2.0), scale=2.0)


@pytest.mark.parametrize(
    "cls, arguments",
    [
        (FeedForward, {"dff": 16, "activation": "gelu"}),
        (AddNorm, {"norm_first": True, "epsilon": 1e-3}),
        (
            EncoderLayer,
            {
                "num_heads": 2,
                "dff": 16,
                "key_dim": 3,
                "dropout": 0.2,
                "attention_dropout": 0.1,
                "activation": "gelu",
                "norm_first": True,
            },
        ),
        (
            DecoderLayer,
            {
                "num_heads": 2,
                "dff": 16,
                "dropout": 0.2,
                "activation": "gelu",
                "norm_first": True,
                "use_cross_attention": False,
            },
        ),
    ],
)
def test_non_default_arguments_survive_the_config(cls, arguments):
    assert_config_round_trip(cls(**arguments), **arguments)


def test_pre_ln_gelu_transformer_saves_and_loads(tmp_path):
    config = TransformerConfig(
        num_layers=2,
        d_model=16,
        num_heads=2,
        dff=32,
        max_length=8,
        norm_first=True,
        activation="gelu",
    )
    model = build_transformer(40, 50, config=config)
    rng = np.random.default_rng(0)
    inputs = (random_ids(rng, 2, 8, 40, pad_from=[8, 5]), random_ids(rng, 2, 8, 50))
    assert_save_load_identical(model, inputs, tmp_path)
    loaded = keras.models.load_model(tmp_path / "model.keras", safe_mode=True)
    layers = [layer for layer in loaded.layers if isinstance(layer, (EncoderLayer, DecoderLayer))]
    assert layers and all(layer.get_config()["norm_first"] for layer in layers)
    assert all(
        layer.get_config()["activation"] in ("gelu", {"class_name": "function", "config": "gelu"})
        or "gelu" in str(layer.get_config()["activation"])
        for layer in layers
    )
