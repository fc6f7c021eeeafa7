"""build_transformer: shapes, padding and causal invariance, save/load, formula, fit."""

import keras
import numpy as np
import pytest

from keras_transformer.models import build_transformer
from keras_transformer.models.parameters import transformer_parameters
from tests.helpers import SMALL_MODEL, assert_save_load_identical, compiled, random_ids

SIZE = SMALL_MODEL
RNG = np.random.default_rng(0)


def batch(src_len=5, tgt_len=4, src_pad=(5, 3), tgt_pad=(4, 2)):
    return {
        "source": random_ids(RNG, 2, src_len, 30, src_pad),
        "target": random_ids(RNG, 2, tgt_len, 25, tgt_pad),
    }


def extend(ids, extra):
    return np.pad(ids, ((0, 0), (0, extra)))


@pytest.fixture(scope="module")
def model():
    return build_transformer(30, 25, dropout=0.1, **SIZE)


@pytest.mark.backend_smoke
def test_shapes_dtype_and_dynamic_lengths(model):
    assert model.input["source"].shape == (None, None)
    assert tuple(model.output.shape) == (None, None, 25)
    for src_len, tgt_len in [(5, 4), (9, 1)]:
        logits = model(batch(src_len, tgt_len, None, None))
        assert tuple(logits.shape) == (2, tgt_len, 25)
        assert keras.backend.standardize_dtype(logits.dtype) == "float32"


@pytest.mark.backend_smoke
@pytest.mark.parametrize("runner", ["eager", "compiled", "predict"])
def test_extra_padding_leaves_real_logits_unchanged(model, runner):
    inputs = batch()
    padded = {"source": extend(inputs["source"], 3), "target": extend(inputs["target"], 2)}
    run = {
        "eager": lambda x: model(x, training=False),
        "compiled": compiled(lambda x: model(x, training=False)),
        "predict": lambda x: model.predict(x, verbose=0),
    }[runner]
    base, more = np.asarray(run(inputs)), np.asarray(run(padded))
    real = inputs["target"] != 0
    np.testing.assert_allclose(more[:, :4][real], base[real], atol=1e-5)


def test_padding_invariance_under_fit_evaluation(model):
    """The loss `evaluate` reports does not move when padding is appended."""
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0))
    inputs = batch()
    labels = np.where(inputs["target"] != 0, RNG.integers(1, 25, inputs["target"].shape), 0)
    padded = {"source": extend(inputs["source"], 4), "target": extend(inputs["target"], 3)}
    a = model.evaluate(inputs, labels, verbose=0)
    b = model.evaluate(padded, extend(labels, 3), verbose=0)
    assert a == pytest.approx(b, abs=1e-5)


@pytest.mark.backend_smoke
def test_causal_invariance(model):
    inputs = batch(tgt_pad=None)
    base = np.asarray(model(inputs))
    changed = dict(inputs, target=inputs["target"].copy())
    changed["target"][:, 2:] = RNG.integers(1, 25, (2, 2))
    after = np.asarray(model(changed))
    np.testing.assert_allclose(after[:, :2], base[:, :2], atol=1e-5)
    assert np.abs(after[:, 2:] - base[:, 2:]).max() > 1e-4


def test_source_reaches_every_target_position(model):
    inputs = batch(src_pad=None, tgt_pad=None)
    changed = dict(inputs, source=inputs["source"].copy())
    changed["source"][:, -1] = (changed["source"][:, -1] % 29) + 1
    diff = np.abs(np.asarray(model(changed)) - np.asarray(model(inputs))).max(axis=(0, 2))
    assert np.all(diff > 1e-5)


@pytest.mark.backend_smoke
def test_save_load_safe_mode(model, tmp_path):
    assert_save_load_identical(model, batch(), tmp_path)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"share_embeddings": True},
        {"norm_first": True, "learned_positions": True},
    ],
)
def test_parameter_count_equals_formula(options):
    vocab_t = 30 if options.get("share_embeddings") else 25
    model = build_transformer(30, vocab_t, **SIZE, **options)
    assert model.count_params() == transformer_parameters(30, vocab_t, **SIZE, **options)


def test_paper_base_configuration_parameter_count():
    """6 layers, d_model 512, 8 heads, dff 2048, shared 37000 vocabulary: ~63M (paper: 65M)."""
    model = build_transformer(
        37000, 37000, num_layers=6, d_model=512, num_heads=8, dff=2048, share_embeddings=True
    )
    assert model.count_params() == 63_082_496


@pytest.mark.backend_smoke
def test_shared_embeddings_use_one_matrix_everywhere():
    model = build_transformer(30, 30, share_embeddings=True, dropout=0.0, **SIZE)
    layer = model.get_layer("shared_embedding")
    matrix = layer.token_embedding.embeddings
    assert sum(1 for w in model.weights if w.shape == (30, 16)) == 1
    inputs = batch(src_pad=None, tgt_pad=None)
    before = np.asarray(model(inputs))
    matrix.assign(matrix * 2.0)  # changes source, target and output projection alike
    assert np.abs(np.asarray(model(inputs)) - before).max() > 1e-3
    with pytest.raises(ValueError, match="share_embeddings=True needs one vocabulary"):
        build_transformer(30, 25, share_embeddings=True, **SIZE)


def test_attention_scores_outputs_match_the_plain_model(model):
    probe = build_transformer(30, 25, return_attention_scores=True, **SIZE)
    probe.set_weights(model.get_weights())
    inputs = batch()
    out = probe(inputs)
    np.testing.assert_allclose(out["logits"], model(inputs), atol=1e-5)
    cross = np.asarray(out["decoder_layer_1_cross_attention"])
    assert cross.shape == (2, 2, 4, 5)
    np.testing.assert_allclose(cross.sum(-1), 1.0, atol=1e-5)
    assert np.all(cross[1, :, :, 3:] == 0.0)  # padded source positions
    assert set(out) == {
        "logits",
        *(f"encoder_layer_{i}_self_attention" for i in range(2)),
        *(
            f"decoder_layer_{i}_{k}"
            for i in range(2)
            for k in ("self_attention", "cross_attention")
        ),
    }


def test_summary_names_the_layers(model):
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    for name in ("encoder_embedding", "encoder_layer_1", "decoder_layer_0", "logits"):
        assert name in text


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(d_model=130, num_heads=8), "d_model=130 must be divisible by num_heads=8"),
        (dict(num_layers=0), "num_layers"),
        (dict(dff=-1), "dff"),
        (dict(dropout=1.0), "dropout"),
        (dict(dropout=-0.1), "dropout"),
        (dict(max_length=0), "max_length"),
    ],
)
def test_invalid_hyperparameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_transformer(30, 25, **{**SIZE, **kwargs})
    with pytest.raises(ValueError, match="vocab_size"):
        build_transformer(0, 25, **SIZE)


@pytest.mark.backend_smoke
def test_one_fit_step_lowers_the_loss():
    model = build_transformer(30, 25, dropout=0.0, **SIZE)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
    )
    inputs = batch()
    labels = np.where(inputs["target"] != 0, (inputs["target"] * 7) % 24 + 1, 0)
    before = model.evaluate(inputs, labels, verbose=0)
    model.fit(inputs, labels, epochs=1, verbose=0)
    assert model.evaluate(inputs, labels, verbose=0) < before
