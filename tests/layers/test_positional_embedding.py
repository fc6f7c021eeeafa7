"""positional_encoding and PositionalEmbedding."""

import math

import keras
import numpy as np
import pytest

from keras_transformer.layers import PositionalEmbedding, positional_encoding
from tests.helpers import assert_config_round_trip


@pytest.mark.parametrize("depth", [8, 7])
def test_encoding_is_the_paper_formula(depth):
    pe = positional_encoding(20, depth)
    assert pe.shape == (20, depth) and pe.dtype == np.float32
    for pos in (0, 3, 19):
        for i in range(depth):
            angle = pos / 10000 ** (2 * (i // 2) / depth)
            expected = math.sin(angle) if i % 2 == 0 else math.cos(angle)
            assert pe[pos, i] == pytest.approx(expected, abs=1e-6)


def test_encoding_of_shifted_position_is_a_rotation():
    """PE[pos + k] is a fixed linear map of PE[pos] (the property the paper cites)."""
    pe = positional_encoding(40, 6).astype("float64")
    k = 5
    # solve PE[pos+k] = PE[pos] @ M on the first positions, check on the rest
    m, *_ = np.linalg.lstsq(pe[:20], pe[k : 20 + k], rcond=None)
    np.testing.assert_allclose(pe[20:35] @ m, pe[20 + k : 35 + k], atol=1e-6)


def test_embedding_is_scaled_tokens_plus_sinusoid():
    layer = PositionalEmbedding(11, 8, max_length=10)
    ids = np.array([[3, 1, 4, 1], [5, 9, 2, 0]])
    out = np.asarray(layer(ids))
    table = np.asarray(layer.token_embedding.embeddings)
    expected = table[ids] * math.sqrt(8) + positional_encoding(10, 8)[:4][None]
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_start_index_embeds_one_position_like_the_full_sequence():
    layer = PositionalEmbedding(11, 8, max_length=10)
    ids = np.array([[3, 1, 4, 1, 5]])
    full = np.asarray(layer(ids))
    for t in range(5):
        step = np.asarray(layer(ids[:, t : t + 1], start_index=t))
        np.testing.assert_allclose(step[:, 0], full[:, t], atol=1e-6)


def test_mask_zero_and_its_propagation():
    ids = np.array([[4, 2, 0, 0]])
    layer = PositionalEmbedding(5, 4)
    np.testing.assert_array_equal(layer.compute_mask(ids), [[True, True, False, False]])
    np.testing.assert_array_equal(layer(ids)._keras_mask, [[True, True, False, False]])
    assert PositionalEmbedding(5, 4, mask_zero=False).compute_mask(ids) is None


def test_learned_positions_and_weight_count():
    assert_weights = PositionalEmbedding(10, 4, max_length=6, learned_positions=True)
    assert_weights(np.array([[1, 2]]))
    assert assert_weights.count_params() == 10 * 4 + 6 * 4
    fixed = PositionalEmbedding(10, 4, max_length=6)
    fixed(np.array([[1, 2]]))
    assert fixed.count_params() == 10 * 4


def test_reverse_projects_on_the_token_matrix():
    layer = PositionalEmbedding(7, 4)
    layer(np.array([[1]]))
    hidden = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    logits = layer(hidden, reverse=True)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    assert tuple(logits.shape) == (2, 3, 7)
    np.testing.assert_allclose(
        logits, hidden @ np.asarray(layer.token_embedding.embeddings).T, atol=1e-5
    )


def test_symbolic_dynamic_length_config_and_save(tmp_path):
    ids = keras.Input((None,), dtype="int32")
    layer = PositionalEmbedding(9, 6, max_length=12, learned_positions=True, name="emb")
    assert tuple(layer(ids).shape) == (None, None, 6)
    assert_config_round_trip(layer)
    model = keras.Model(ids, layer(ids))
    batch = np.array([[1, 2, 3, 0]])
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras", safe_mode=True)
    np.testing.assert_allclose(model(batch), loaded(batch), atol=1e-6)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(vocab_size=0, d_model=4), "vocab_size"),
        (dict(vocab_size=5, d_model=-4), "d_model"),
        (dict(vocab_size=5, d_model=4, max_length=0), "max_length"),
    ],
)
def test_invalid_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        PositionalEmbedding(**kwargs)
    with pytest.raises(ValueError, match="length"):
        positional_encoding(0, 4)
