"""Tests for keras_transformer.training.losses."""

import keras
import numpy as np
import pytest

from keras_transformer.training import MaskedAccuracy, MaskedSparseCategoricalCrossentropy

VOCAB = 7


def make_batch(lengths, seq_len=6, vocab=VOCAB, seed=0, dtype="float32"):
    """Random logits and labels; row i has lengths[i] real tokens, then padding (0)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=2.0, size=(len(lengths), seq_len, vocab)).astype(dtype)
    labels = rng.integers(1, vocab, size=(len(lengths), seq_len))
    labels[np.arange(seq_len)[None, :] >= np.asarray(lengths)[:, None]] = 0
    return logits, labels


def log_softmax(x):
    x = np.asarray(x, "float64")
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def reference_loss(logits, labels, eps=0.0, pad_id=0):
    """Sum of token losses over non-pad tokens / number of non-pad tokens (float64)."""
    logp = log_softmax(logits)
    vocab = logits.shape[-1]
    target = (1 - eps) * np.eye(vocab)[np.where(labels == pad_id, 0, labels)] + eps / vocab
    token = -(target * logp).sum(-1)
    mask = labels != pad_id
    return token[mask].sum() / mask.sum()


# Row 2 is all padding except one token; row 3 is all padding.
LENGTHS = [6, 4, 1, 0, 3]


def test_equals_keras_sparse_crossentropy_with_ignore_class():
    logits, labels = make_batch(LENGTHS)
    ours = MaskedSparseCategoricalCrossentropy()(labels, logits)
    keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    np.testing.assert_allclose(float(ours), float(keras_loss(labels, logits)), atol=1e-6)
    np.testing.assert_allclose(float(ours), reference_loss(logits, labels), atol=1e-6)


def test_is_token_mean_not_row_mean():
    logits, labels = make_batch([6, 1])
    logp = log_softmax(logits)
    token = -np.take_along_axis(logp, labels[..., None], -1)[..., 0]
    row_means = [token[0].mean(), token[1, :1].mean()]
    ours = float(MaskedSparseCategoricalCrossentropy()(labels, logits))
    np.testing.assert_allclose(ours, (token[0].sum() + token[1, 0]) / 7, atol=1e-6)
    assert abs(ours - np.mean(row_means)) > 1e-3


def test_padding_does_not_dilute_the_loss():
    logits, labels = make_batch(LENGTHS)
    wider_logits = np.concatenate([logits, np.random.default_rng(5).normal(size=(5, 3, VOCAB))], 1)
    wider_labels = np.concatenate([labels, np.zeros((5, 3), labels.dtype)], 1)
    loss = MaskedSparseCategoricalCrossentropy(label_smoothing=0.1)
    np.testing.assert_allclose(
        float(loss(wider_labels, wider_logits.astype("float32"))),
        float(loss(labels, logits)),
        atol=1e-6,
    )


def test_interior_padding_pattern_matches_keras():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(3, 5, VOCAB)).astype("float32")
    labels = rng.integers(0, VOCAB, size=(3, 5))  # zeros anywhere
    ours = MaskedSparseCategoricalCrossentropy()(labels, logits)
    keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    np.testing.assert_allclose(float(ours), float(keras_loss(labels, logits)), atol=1e-6)


@pytest.mark.parametrize("weight_shape", ["per_sample", "per_token"])
def test_sample_weight_matches_keras(weight_shape):
    logits, labels = make_batch(LENGTHS)
    rng = np.random.default_rng(7)
    shape = (len(LENGTHS),) if weight_shape == "per_sample" else labels.shape
    weights = rng.uniform(0.1, 2.0, size=shape).astype("float32")
    ours = MaskedSparseCategoricalCrossentropy()(labels, logits, sample_weight=weights)
    keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    # Keras 3.15 cannot broadcast (batch,) weights against its (batch, seq_len) mask;
    # give it (batch, 1). Ours takes (batch,) as it is.
    keras_weights = weights[:, None] if weights.ndim == 1 else weights
    expected = keras_loss(labels, logits, sample_weight=keras_weights)
    np.testing.assert_allclose(float(ours), float(expected), atol=1e-6)


@pytest.mark.parametrize("eps", [0.1, 0.3])
def test_label_smoothing_matches_keras_categorical_on_one_hot(eps):
    logits, labels = make_batch(LENGTHS, seed=2)
    keras_cce = keras.losses.CategoricalCrossentropy(
        from_logits=True, label_smoothing=eps, reduction=None
    )
    per_token = np.asarray(keras_cce(np.eye(VOCAB, dtype="float32")[labels], logits))
    expected = per_token[labels != 0].mean()
    ours = MaskedSparseCategoricalCrossentropy(label_smoothing=eps)(labels, logits)
    np.testing.assert_allclose(float(ours), expected, atol=1e-6)
    np.testing.assert_allclose(float(ours), reference_loss(logits, labels, eps), atol=1e-6)


def test_label_smoothing_penalises_confident_correct_predictions():
    _, labels = make_batch(LENGTHS)
    confident = (20.0 * np.eye(VOCAB)[labels]).astype("float32")  # right, very sure
    plain = float(MaskedSparseCategoricalCrossentropy()(labels, confident))
    smoothed = float(MaskedSparseCategoricalCrossentropy(label_smoothing=0.1)(labels, confident))
    assert plain < 1e-6
    assert smoothed > plain + 1.0


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_logits_give_float32_loss(dtype):
    logits32, labels = make_batch(LENGTHS, seed=4)
    low = keras.ops.cast(logits32, dtype)
    loss = MaskedSparseCategoricalCrossentropy(label_smoothing=0.1)
    value = loss(labels, low)
    assert keras.backend.standardize_dtype(value.dtype) == "float32"
    # Exactly the float32 loss of the rounded logits: no float16 arithmetic inside.
    rounded = np.asarray(keras.ops.cast(low, "float32"))
    np.testing.assert_allclose(float(value), float(loss(labels, rounded)), rtol=1e-6)
    np.testing.assert_allclose(float(value), float(loss(labels, logits32)), rtol=2e-2)


def test_large_float16_logits_do_not_overflow():
    _, labels = make_batch(LENGTHS)
    logits = (60000.0 * (np.eye(VOCAB)[labels] - 0.5)).astype("float16")
    value = float(MaskedSparseCategoricalCrossentropy()(labels, logits))
    assert np.isfinite(value) and value < 1e-6


def test_probabilities_match_keras_when_not_from_logits():
    logits, labels = make_batch(LENGTHS)
    probs = np.exp(log_softmax(logits)).astype("float32")
    ours = MaskedSparseCategoricalCrossentropy(from_logits=False)(labels, probs)
    keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=False, ignore_class=0)
    np.testing.assert_allclose(float(ours), float(keras_loss(labels, probs)), atol=1e-5)


def test_custom_pad_id():
    logits, labels = make_batch(LENGTHS)
    shifted = np.where(labels == 0, -1, labels)
    ours = MaskedSparseCategoricalCrossentropy(pad_id=-1)(shifted, logits)
    np.testing.assert_allclose(float(ours), reference_loss(logits, shifted, pad_id=-1), atol=1e-6)


def test_reductions():
    logits, labels = make_batch(LENGTHS)
    weights = np.linspace(0.5, 1.5, len(LENGTHS)).astype("float32")
    per_token = np.asarray(
        MaskedSparseCategoricalCrossentropy(reduction="none")(labels, logits, sample_weight=weights)
    )
    assert per_token.shape == labels.shape
    assert np.all(per_token[labels == 0] == 0.0)
    keras_none = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, ignore_class=0, reduction=None
    )
    np.testing.assert_allclose(
        per_token, np.asarray(keras_none(labels, logits)) * weights[:, None], atol=1e-6
    )
    total = float(MaskedSparseCategoricalCrossentropy(reduction="sum")(labels, logits, weights))
    np.testing.assert_allclose(total, per_token.sum(), rtol=1e-6)
    by_weight = MaskedSparseCategoricalCrossentropy(reduction="mean_with_sample_weight")
    token_weights = np.broadcast_to(weights[:, None], labels.shape)[labels != 0]
    np.testing.assert_allclose(
        float(by_weight(labels, logits, weights)), per_token.sum() / token_weights.sum(), rtol=1e-6
    )


def test_call_returns_per_token_losses_zero_at_padding():
    logits, labels = make_batch(LENGTHS)
    token = np.asarray(MaskedSparseCategoricalCrossentropy().call(labels, logits))
    expected = -np.take_along_axis(log_softmax(logits), labels[..., None], -1)[..., 0]
    np.testing.assert_allclose(token, np.where(labels != 0, expected, 0.0), atol=1e-6)


def test_non_finite_logits_at_padding_do_not_leak():
    logits, labels = make_batch(LENGTHS)
    poisoned = logits.copy()
    poisoned[labels == 0] = np.nan
    loss = MaskedSparseCategoricalCrossentropy(label_smoothing=0.1)
    np.testing.assert_allclose(
        float(loss(labels, poisoned)), float(loss(labels, logits)), rtol=1e-7
    )


def test_all_padding_gives_zero_not_nan():
    logits, labels = make_batch([0, 0])
    assert float(MaskedSparseCategoricalCrossentropy()(labels, logits)) == 0.0


def test_labels_with_trailing_axis():
    logits, labels = make_batch(LENGTHS)
    loss = MaskedSparseCategoricalCrossentropy()
    np.testing.assert_allclose(
        float(loss(labels[..., None], logits)), float(loss(labels, logits)), rtol=1e-7
    )


def test_shape_mismatch_error_names_shapes():
    logits, labels = make_batch(LENGTHS)
    with pytest.raises(ValueError, match=r"y_true has shape \(5,\)"):
        MaskedSparseCategoricalCrossentropy()(labels[:, 0], logits)


def test_no_gradient_reaches_padding_positions():
    import tensorflow as tf

    logits, labels = make_batch(LENGTHS)
    logits = tf.Variable(logits)
    with tf.GradientTape() as tape:
        value = MaskedSparseCategoricalCrossentropy(label_smoothing=0.1)(labels, logits)
    grad = tape.gradient(value, logits).numpy()
    assert np.all(grad[labels == 0] == 0.0)
    assert np.all(np.abs(grad[labels != 0]).sum(-1) > 0.0)


@pytest.mark.parametrize(
    "bad, error",
    [
        (-0.1, ValueError),
        (1.0, ValueError),
        (1.5, ValueError),
        (True, TypeError),
        ("0.1", TypeError),
        (None, TypeError),
    ],
)
def test_bad_label_smoothing(bad, error):
    with pytest.raises(error, match=r"label_smoothing must be a number in \[0, 1\)"):
        MaskedSparseCategoricalCrossentropy(label_smoothing=bad)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"pad_id": 0.5}, TypeError, "pad_id=0.5"),
        ({"pad_id": None}, TypeError, "pad_id=None"),
        ({"from_logits": "yes"}, TypeError, "from_logits='yes'"),
        ({"reduction": "avg"}, ValueError, "reduction='avg'"),
    ],
)
def test_other_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        MaskedSparseCategoricalCrossentropy(**kwargs)
    if "pad_id" in kwargs:
        with pytest.raises(error, match=message):
            MaskedAccuracy(**kwargs)


def test_loss_config_and_serialization_round_trip():
    loss = MaskedSparseCategoricalCrossentropy(
        label_smoothing=0.1, pad_id=2, from_logits=False, reduction="sum", name="tok"
    )
    config = loss.get_config()
    assert config == {
        "name": "tok",
        "reduction": "sum",
        "label_smoothing": 0.1,
        "pad_id": 2,
        "from_logits": False,
    }
    assert MaskedSparseCategoricalCrossentropy.from_config(config).get_config() == config
    serialized = keras.saving.serialize_keras_object(loss)
    assert serialized["registered_name"] == (
        "keras_transformer>MaskedSparseCategoricalCrossentropy"
    )
    clone = keras.losses.deserialize(serialized)
    assert isinstance(clone, MaskedSparseCategoricalCrossentropy)
    assert clone.get_config() == config


# --- MaskedAccuracy -----------------------------------------------------------


def numpy_accuracy(batches):
    correct = count = 0
    for labels, logits in batches:
        mask = labels != 0
        correct += ((logits.argmax(-1) == labels) & mask).sum()
        count += mask.sum()
    return correct / count


def accuracy_batches():
    batches = []
    for seed, lengths in enumerate([[6, 1], [2, 0, 5], [1]]):
        logits, labels = make_batch(lengths, seed=10 + seed, vocab=3)  # ~1/3 right by chance
        batches.append((labels, logits))
    return batches


def test_accuracy_exact_over_batches():
    batches = accuracy_batches()
    metric = MaskedAccuracy()
    for labels, logits in batches:
        metric.update_state(labels, logits)
    expected = numpy_accuracy(batches)
    np.testing.assert_allclose(float(metric.result()), expected, rtol=1e-6)
    mean_of_means = np.mean([numpy_accuracy([b]) for b in batches])
    assert abs(expected - mean_of_means) > 1e-3  # the two really differ here
    metric.reset_state()
    assert float(metric.result()) == 0.0


def test_accuracy_sample_weight_and_trailing_axis():
    logits, labels = make_batch(LENGTHS, vocab=3)
    weights = np.arange(1, len(LENGTHS) + 1, dtype="float32")
    metric = MaskedAccuracy()
    metric.update_state(labels[..., None], logits, sample_weight=weights)
    mask = labels != 0
    w = np.broadcast_to(weights[:, None], labels.shape) * mask
    expected = (w * (logits.argmax(-1) == labels)).sum() / w.sum()
    np.testing.assert_allclose(float(metric.result()), expected, rtol=1e-6)


def test_accuracy_counts_stay_exact_beyond_float32():
    metric = MaskedAccuracy()
    right = np.array([[[0.0, 1.0]]], "float32")  # predicts 1
    metric.update_state(np.array([[1]]), right, sample_weight=np.array([2.0**24]))
    metric.update_state(np.array([[1]]), right[..., ::-1].copy())  # one wrong token
    assert float(metric.count) == 2**24 + 1  # float32 would round this to 2**24
    assert float(metric.result()) < 1.0


def test_accuracy_config_round_trip():
    metric = MaskedAccuracy(pad_id=3, name="tok_acc")
    config = metric.get_config()
    assert config["pad_id"] == 3 and config["name"] == "tok_acc"
    clone = MaskedAccuracy.from_config(config)
    assert clone.get_config() == config
    serialized = keras.saving.serialize_keras_object(metric)
    assert serialized["registered_name"] == "keras_transformer>MaskedAccuracy"
    assert keras.metrics.deserialize(serialized).get_config() == config


# --- through model.compile / evaluate / save -------------------------------------


def tiny_model(seq_len=6, vocab=VOCAB):
    inputs = keras.Input((seq_len,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(vocab, 8, name="embedding")(inputs)  # (batch, seq_len, 8)
    logits = keras.layers.Dense(vocab, name="logits")(x)  # (batch, seq_len, vocab)
    return keras.Model(inputs, logits)


def tiny_data():
    _, labels = make_batch(LENGTHS + [2, 5], seed=21)
    inputs = np.random.default_rng(22).integers(1, VOCAB, size=labels.shape).astype("int32")
    return inputs, labels


def compiled_tiny_model(label_smoothing):
    keras.utils.set_random_seed(0)
    model = tiny_model()
    model.compile(
        optimizer=keras.optimizers.Adam(0.05),
        loss=MaskedSparseCategoricalCrossentropy(label_smoothing=label_smoothing),
        metrics=[MaskedAccuracy()],
    )
    return model


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_compile_evaluate_matches_hand_computation(label_smoothing):
    x, y = tiny_data()
    model = compiled_tiny_model(label_smoothing)
    logits = model.predict(x, verbose=0)
    result = model.evaluate(x, y, batch_size=len(x), verbose=0, return_dict=True)
    np.testing.assert_allclose(
        result["loss"], reference_loss(logits, y, label_smoothing), rtol=1e-5
    )
    np.testing.assert_allclose(result["masked_accuracy"], numpy_accuracy([(y, logits)]), rtol=1e-6)


def test_evaluate_over_batches_loss_is_batch_weighted_and_accuracy_exact():
    x, y = tiny_data()  # 7 rows -> batches of 3, 3, 1
    model = compiled_tiny_model(0.0)
    logits = model.predict(x, verbose=0)
    result = model.evaluate(x, y, batch_size=3, verbose=0, return_dict=True)
    sizes, losses = [], []
    for start in range(0, len(x), 3):
        sl = slice(start, start + 3)
        sizes.append(len(x[sl]))
        losses.append(reference_loss(logits[sl], y[sl]))
    # Keras averages the per-batch losses weighted by batch size ...
    np.testing.assert_allclose(result["loss"], np.average(losses, weights=sizes), rtol=1e-5)
    # ... while MaskedAccuracy counts every real token of the epoch once.
    np.testing.assert_allclose(result["masked_accuracy"], numpy_accuracy([(y, logits)]), rtol=1e-6)


def test_fit_reduces_loss():
    x, y = tiny_data()
    model = compiled_tiny_model(0.1)
    history = model.fit(x, y, batch_size=len(x), epochs=30, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0] - 0.1


def test_compiled_loss_and_metric_survive_keras_save_and_load(tmp_path):
    x, y = tiny_data()
    model = compiled_tiny_model(0.1)
    model.fit(x, y, batch_size=len(x), epochs=1, verbose=0)
    path = tmp_path / "tiny.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded.loss, MaskedSparseCategoricalCrossentropy)
    assert loaded.loss.label_smoothing == 0.1
    before = model.evaluate(x, y, batch_size=len(x), verbose=0, return_dict=True)
    after = loaded.evaluate(x, y, batch_size=len(x), verbose=0, return_dict=True)
    assert set(after) == {"loss", "masked_accuracy"}
    for key in before:
        np.testing.assert_allclose(after[key], before[key], rtol=1e-6)
