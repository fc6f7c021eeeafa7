"""build_encoder, build_decoder, build_classifier, build_language_model."""

import keras
import numpy as np
import pytest

from keras_transformer.models import (
    build_classifier,
    build_decoder,
    build_encoder,
    build_language_model,
)
from tests.helpers import SMALL_MODEL, assert_save_load_identical, random_ids

SIZE = SMALL_MODEL
RNG = np.random.default_rng(1)


def test_encoder_padding_invariance_shapes_and_save(tmp_path):
    encoder = build_encoder(40, **SIZE)
    ids = random_ids(RNG, 2, 5, 40, (5, 2))
    out = np.asarray(encoder(ids))
    assert out.shape == (2, 5, 16) and tuple(encoder.output.shape) == (None, None, 16)
    longer = np.asarray(encoder(np.pad(ids, ((0, 0), (0, 3)))))
    real = ids != 0
    np.testing.assert_allclose(longer[:, :5][real], out[real], atol=1e-5)
    assert_save_load_identical(encoder, ids, tmp_path)
    probe = build_encoder(40, return_attention_scores=True, **SIZE)
    probe.set_weights(encoder.get_weights())
    result = probe(ids)
    np.testing.assert_allclose(result["output"], out, atol=1e-5)
    assert result["encoder_layer_1_self_attention"].shape == (2, 2, 5, 5)


def test_decoder_causal_and_context_padding(tmp_path):
    decoder = build_decoder(30, **SIZE)
    inputs = {
        "target": random_ids(RNG, 2, 4, 30),
        "context": RNG.normal(size=(2, 6, 16)).astype("float32"),
        "context_padding_mask": np.array([[True] * 6, [True] * 3 + [False] * 3]),
    }
    base = np.asarray(decoder(inputs))
    assert base.shape == (2, 4, 30)
    changed = dict(inputs, target=inputs["target"].copy())
    changed["target"][:, 3] = 1
    np.testing.assert_allclose(np.asarray(decoder(changed))[:, :3], base[:, :3], atol=1e-5)
    junk = dict(inputs, context=inputs["context"].copy())
    junk["context"][1, 3:] = 9.0  # masked source positions
    np.testing.assert_allclose(np.asarray(decoder(junk)), base, atol=1e-5)
    assert_save_load_identical(decoder, inputs, tmp_path)


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_classifier_pooling_padding_and_save(pooling, tmp_path):
    model = build_classifier(40, 3, pooling=pooling, **SIZE)
    ids = random_ids(RNG, 2, 6, 40, (6, 3))
    logits = np.asarray(model(ids))
    assert logits.shape == (2, 3)
    longer = np.asarray(model(np.pad(ids, ((0, 0), (0, 4)))))
    np.testing.assert_allclose(longer, logits, atol=1e-5)
    assert_save_load_identical(model, ids, tmp_path)


def test_classifier_learns_a_tiny_task():
    """Label = whether token 5 occurs anywhere: needs the whole sequence (no causal mask)."""
    ids = RNG.integers(6, 20, size=(64, 6)).astype("int32")
    labels = RNG.integers(0, 2, size=64)
    ids[labels == 1, RNG.integers(0, 6, size=(labels == 1).sum())] = 5
    model = build_classifier(20, 2, pooling="mean", dropout=0.0, **SIZE)
    model.compile(
        keras.optimizers.Adam(3e-3),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    model.fit(ids, labels, epochs=40, batch_size=16, verbose=0)
    assert model.evaluate(ids, labels, verbose=0)[1] > 0.9


def test_language_model_causal_padding_tied_and_save(tmp_path):
    model = build_language_model(30, **SIZE)
    ids = random_ids(RNG, 2, 5, 30, (5, 3))
    base = np.asarray(model(ids))
    assert base.shape == (2, 5, 30)
    changed = ids.copy()
    changed[0, 3:] = 7
    np.testing.assert_allclose(np.asarray(model(changed))[0, :3], base[0, :3], atol=1e-5)
    longer = np.asarray(model(np.pad(ids, ((0, 0), (0, 2)))))
    real = ids != 0
    np.testing.assert_allclose(longer[:, :5][real], base[real], atol=1e-5)
    assert_save_load_identical(model, ids, tmp_path)
    tied = build_language_model(30, tie_embeddings=True, **SIZE)
    assert tied.count_params() == model.count_params() - (16 * 30 + 30)
    assert not any("cross" in w.path for w in model.weights)


@pytest.mark.parametrize(
    "builder, args",
    [
        (build_encoder, (40,)),
        (build_decoder, (40,)),
        (build_classifier, (40, 3)),
        (build_language_model, (40,)),
    ],
)
def test_builders_reject_invalid_hyperparameters(builder, args):
    with pytest.raises(ValueError, match="d_model=18 must be divisible by num_heads=4"):
        builder(*args, **{**SIZE, "d_model": 18, "num_heads": 4})
    with pytest.raises(ValueError, match="dropout"):
        builder(*args, **{**SIZE, "dropout": 1.5})


def test_classifier_rejects_unknown_pooling_and_classes():
    with pytest.raises(ValueError, match="pooling"):
        build_classifier(40, 3, pooling="max", **SIZE)
    with pytest.raises(ValueError, match="num_classes"):
        build_classifier(40, 0, **SIZE)
