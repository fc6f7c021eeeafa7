"""`TransformerConfig`: validation, JSON round trip, and every builder accepting it."""

import dataclasses

import pytest

from keras_transformer import models
from keras_transformer.models import TransformerConfig

SMALL = TransformerConfig(num_layers=1, d_model=16, num_heads=2, dff=32, max_length=12)


def test_json_round_trip_and_unknown_keys_ignored():
    assert TransformerConfig.from_json(SMALL.to_json()) == SMALL
    assert TransformerConfig.from_dict({**SMALL.to_dict(), "task": "numbers"}) == SMALL


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("d_model", 15, "d_model=15 must be divisible by num_heads=2"),
        ("num_layers", 0, "num_layers must be a positive integer"),
        ("dropout", 1.0, "dropout must be a number in [0, 1)"),
    ],
)
def test_bad_values_name_the_field(field, value, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace(")", r"\)")):
        dataclasses.replace(SMALL, **{field: value})


def test_keywords_replace_the_config_and_unknown_keywords_are_named():
    model = models.build_encoder(30, config=SMALL, num_heads=4)
    assert model.get_layer("encoder_layer_0").num_heads == 4
    with pytest.raises(TypeError, match="d_modle"):
        models.build_encoder(30, config=SMALL, d_modle=16)


@pytest.mark.parametrize(
    "build",
    [
        lambda **k: models.build_encoder(30, **k),
        lambda **k: models.build_decoder(30, **k),
        lambda **k: models.build_transformer(30, 40, **k),
        lambda **k: models.build_classifier(30, 3, **k),
        lambda **k: models.build_language_model(30, **k),
        lambda **k: models.build_masked_language_model(30, **k),
        lambda **k: models.build_token_classifier(30, 3, **k),
        lambda **k: models.build_dual_encoder(30, **k)[1],  # the shared encoder
    ],
)
def test_every_builder_takes_the_config(build):
    """The config and the same values as keywords build the same model, unlike the defaults."""
    from_config = build(config=SMALL)
    from_keywords = build(num_layers=1, d_model=16, num_heads=2, dff=32, max_length=12)
    assert from_config.count_params() == from_keywords.count_params()
    assert from_config.count_params() < build().count_params()
    embeddings = [layer for layer in from_config.layers if hasattr(layer, "max_length")]
    assert embeddings and all(layer.max_length == SMALL.max_length for layer in embeddings)
