"""build_masked_language_model and transfer_weights."""

import keras
import numpy as np
import pytest

from keras_transformer.models import (
    build_classifier,
    build_encoder,
    build_masked_language_model,
    transfer_weights,
)
from keras_transformer.models.parameters import encoder_layer_parameters
from tests.helpers import SMALL_MODEL, assert_save_load_identical, random_ids

SIZE = SMALL_MODEL
RNG = np.random.default_rng(3)


def test_shapes_padding_bidirectional_and_save(tmp_path):
    model = build_masked_language_model(40, **SIZE)
    ids = random_ids(RNG, 2, 6, 40, (6, 4))
    logits = np.asarray(model(ids))
    assert logits.shape == (2, 6, 40) and logits.dtype == np.float32
    assert tuple(model.output.shape) == (None, None, 40)
    real = ids != 0
    longer = np.asarray(model(np.pad(ids, ((0, 0), (0, 3)))))
    np.testing.assert_allclose(longer[:, :6][real], logits[real], atol=1e-5)
    later = ids.copy()
    later[:, 3] = (later[:, 3] % 39) + 1  # a token *after* position 0 changes
    changed = np.asarray(model(later))
    assert np.abs(changed[:, 0] - logits[:, 0]).max() > 1e-4  # no causal mask: 0 sees 3
    assert_save_load_identical(model, ids, tmp_path)


def test_tied_head_reuses_the_embedding_matrix():
    tied = build_masked_language_model(40, **SIZE)
    untied = build_masked_language_model(40, tie_embeddings=False, **SIZE)
    head = 16 * 16 + 16 + 2 * 16  # mlm_transform, mlm_norm
    encoder = 40 * 16 + 2 * encoder_layer_parameters(16, 2, 32)
    assert tied.count_params() == encoder + head
    assert untied.count_params() == encoder + head + 16 * 40 + 40
    names = {layer.name for layer in untied.layers}
    assert "mlm_logits" in names and "mlm_logits" not in {layer.name for layer in tied.layers}


def test_transfer_copies_the_encoder_and_leaves_the_head():
    mlm = build_masked_language_model(40, **SIZE)
    classifier = build_classifier(40, 3, **SIZE)
    head_before = classifier.get_layer("logits").get_weights()
    copied = transfer_weights(mlm, classifier)
    assert copied == ["encoder_embedding", "encoder_layer_0", "encoder_layer_1"]
    for name in copied:
        for a, b in zip(
            mlm.get_layer(name).get_weights(), classifier.get_layer(name).get_weights(), strict=True
        ):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(head_before, classifier.get_layer("logits").get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    # the encoder computes the same function in both models
    encoder = build_encoder(40, **SIZE)
    transfer_weights(mlm, encoder)
    ids = random_ids(RNG, 2, 5, 40, (5, 3))
    hidden = keras.Model(mlm.input, mlm.get_layer("encoder_layer_1").output)
    np.testing.assert_allclose(np.asarray(encoder(ids)), np.asarray(hidden(ids)), atol=1e-6)


def test_transfer_errors_name_the_problem():
    mlm = build_masked_language_model(40, **SIZE)
    with pytest.raises(ValueError, match="'encoder_embedding' has weights of shapes"):
        transfer_weights(mlm, build_classifier(50, 2, **SIZE))
    other = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="dense_x")])
    with pytest.raises(ValueError, match="share no layer with weights"):
        transfer_weights(mlm, other)
