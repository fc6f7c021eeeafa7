"""build_rnn_seq2seq and build_cnn_seq2seq: same interface as build_transformer."""

import keras
import numpy as np
import pytest

from keras_transformer.models import build_cnn_seq2seq, build_rnn_seq2seq
from keras_transformer.models.baselines import ApplyPaddingMask
from keras_transformer.training import MaskedSparseCategoricalCrossentropy
from tests.helpers import (
    assert_config_round_trip,
    assert_save_load_identical,
    compiled,
    random_ids,
)

RNG = np.random.default_rng(3)

BUILDERS = {
    "lstm_luong": lambda: build_rnn_seq2seq(30, 25, cell="lstm", units=12, attention="luong"),
    "gru_bahdanau_2_layers": lambda: build_rnn_seq2seq(
        30, 25, cell="gru", units=12, attention="bahdanau", num_layers=2
    ),
    "lstm_no_attention": lambda: build_rnn_seq2seq(30, 25, units=12, attention=None),
    "cnn_luong": lambda: build_cnn_seq2seq(30, 25, filters=12, kernel_size=3, num_layers=2),
    "cnn_no_attention": lambda: build_cnn_seq2seq(
        30, 25, filters=12, kernel_size=2, num_layers=1, attention=None
    ),
}


def _inputs(batch=2, src_len=6, tgt_len=4, pad_from=(6, 3)):
    return {
        "source": random_ids(RNG, batch, src_len, 30, pad_from),
        "target": random_ids(RNG, batch, tgt_len, 25, (tgt_len, 2)),
    }


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_shapes_padding_invariance_and_save_load(name, tmp_path):
    model = BUILDERS[name]()
    assert tuple(model.output.shape) == (None, None, 25)  # symbolic, any lengths
    assert sorted(model.input) == ["source", "target"]
    inputs = _inputs()
    logits = np.asarray(model(inputs))
    assert logits.shape == (2, 4, 25) and logits.dtype == np.float32

    # Appending padding to the source (and to the target) changes no real logit:
    # eagerly, compiled (tf.function / jax.jit) and through predict.
    padded = {
        "source": np.pad(inputs["source"], ((0, 0), (0, 5))),
        "target": np.pad(inputs["target"], ((0, 0), (0, 2))),
    }
    real = inputs["target"] != 0  # (batch, tgt_len)
    for run in (model, compiled(model), lambda x: model.predict(x, verbose=0)):
        longer = np.asarray(run(padded))[:, :4]
        np.testing.assert_allclose(longer[real], logits[real], atol=1e-5)
    # ... and junk in the padded source positions is invisible too.
    junk = dict(padded, source=np.where(padded["source"] == 0, 7, padded["source"]))
    assert not np.allclose(np.asarray(model(junk))[:, :4][real], logits[real], atol=1e-5)

    assert_save_load_identical(model, inputs, tmp_path)


@pytest.mark.parametrize("name", ["lstm_luong", "cnn_luong"])
def test_decoder_is_causal(name):
    model = BUILDERS[name]()
    inputs = _inputs(pad_from=(6, 6))
    inputs["target"] = random_ids(RNG, 2, 4, 25)
    base = np.asarray(model(inputs))
    changed = dict(inputs, target=inputs["target"].copy())
    changed["target"][:, 3] = 1  # a later target token cannot change earlier logits
    np.testing.assert_allclose(np.asarray(model(changed))[:, :3], base[:, :3], atol=1e-5)


def test_logits_depend_on_the_source():
    model = BUILDERS["lstm_no_attention"]()
    inputs = _inputs(pad_from=(6, 6))
    other = dict(inputs, source=inputs["source"][::-1].copy())
    assert not np.allclose(np.asarray(model(inputs))[0], np.asarray(model(other))[1])


@pytest.mark.parametrize("name", ["lstm_luong", "cnn_luong"])
def test_one_fit_step_lowers_the_loss(name):
    model = BUILDERS[name]()
    loss = MaskedSparseCategoricalCrossentropy()
    model.compile(keras.optimizers.Adam(1e-2), loss, run_eagerly=True)  # one step: no tracing
    inputs = _inputs(batch=8, pad_from=(6, 6, 6, 6, 4, 4, 3, 3))
    labels = random_ids(RNG, 8, 4, 25, (4, 4, 4, 4, 2, 2, 2, 2))
    before = float(loss(labels, model(inputs)))
    model.fit(inputs, labels, epochs=1, batch_size=8, verbose=0)
    assert float(loss(labels, model(inputs))) < before


def test_parameter_counts():
    units, vocab_s, vocab_t = 12, 30, 25
    model = build_rnn_seq2seq(vocab_s, vocab_t, units=units, attention=None)
    lstm = 4 * (2 * units * units + units)
    expected = vocab_s * units + vocab_t * units + 2 * lstm + units * vocab_t + vocab_t
    assert model.count_params() == expected
    luong = build_rnn_seq2seq(vocab_s, vocab_t, units=units, attention="luong")
    assert luong.count_params() == expected + 2 * units * units + units  # tanh(W [h; c])
    cnn = build_cnn_seq2seq(vocab_s, vocab_t, filters=units, kernel_size=3, num_layers=1)
    block = 3 * units * units + units + 2 * units  # conv + LayerNorm
    embeddings = (vocab_s + vocab_t) * units  # sinusoid positions have no weights
    attention_state = 2 * units * units + units
    assert cnn.count_params() == embeddings + 2 * block + attention_state + units * vocab_t + 25


def test_apply_padding_mask_layer():
    layer = ApplyPaddingMask(name="m")
    assert_config_round_trip(layer)
    x = np.ones((1, 3, 2), "float32")
    out = np.asarray(layer(x, padding_mask=np.array([[True, False, True]])))
    np.testing.assert_array_equal(out[0, :, 0], [1.0, 0.0, 1.0])


@pytest.mark.parametrize(
    ("builder", "kwargs", "message"),
    [
        (build_rnn_seq2seq, {"cell": "rnn"}, "cell='rnn'"),
        (build_rnn_seq2seq, {"attention": "dot"}, "attention='dot'"),
        (build_rnn_seq2seq, {"units": 0}, "units=0"),
        (build_rnn_seq2seq, {"dropout": 1.5}, "dropout=1.5"),
        (build_cnn_seq2seq, {"kernel_size": 0}, "kernel_size=0"),
        (build_cnn_seq2seq, {"attention": "general"}, "attention='general'"),
    ],
)
def test_errors_name_the_argument(builder, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        builder(30, 25, **kwargs)


def test_cnn_attention_starts_soft():
    """The CNN's blocks end in a LayerNorm (states of norm ~sqrt(filters)): its dot-product
    scores are scaled by 1/sqrt(filters), so at initialization the softmax is not saturated
    (unscaled, 0.97 of the weight sat on one source position at filters=32)."""
    keras.utils.set_random_seed(0)
    model = build_cnn_seq2seq(30, 25, filters=32, kernel_size=3, num_layers=2)
    attention = model.get_layer("attention")
    probe = keras.Model(model.input, attention.input[:2])  # query, encoder outputs (no mask)
    inputs = _inputs(batch=8, src_len=10, pad_from=(10,) * 8)
    query, keys = (np.asarray(t) for t in probe(inputs))
    scores = np.einsum("bd,bsd->bs", query[:, 0], keys)  # (batch, src_len)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    assert weights.max(-1).mean() < 0.6, weights.max(-1)
