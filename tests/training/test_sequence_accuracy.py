"""Sequence accuracy (exact match under teacher forcing) and the convergence stop."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.inference import IncrementalDecoder, greedy_search
from keras_transformer.models import build_transformer
from keras_transformer.training import MaskedSequenceAccuracy
from keras_transformer.training.callbacks import SequencesConverged


def _reference(labels, logits):
    """Row-by-row Python: a row counts when it has a real token; right when all are."""
    predicted = logits.argmax(-1)
    rows = [(lab != 0).any() for lab in labels]
    right = [
        all(p == t for p, t in zip(pr, lab, strict=True) if t != 0)
        for pr, lab in zip(predicted, labels, strict=True)
    ]
    return sum(r and ok for r, ok in zip(rows, right, strict=True)) / max(sum(rows), 1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_a_row_by_row_count_over_batches(seed):
    rng = np.random.default_rng(seed)
    metric = MaskedSequenceAccuracy()
    all_labels, all_logits = [], []
    for _ in range(3):
        logits = rng.normal(size=(6, 5, 3)).astype("float32")
        labels = logits.argmax(-1)  # right everywhere ...
        flip = rng.random(labels.shape) < 0.1
        labels = np.where(flip, (labels + 1) % 3, labels)  # ... except where flipped
        labels[:, 3:] *= rng.random((6, 1)) < 0.5  # some rows padded from position 3
        labels[0] = 0  # a row with no real token is not counted
        metric.update_state(labels, logits)
        all_labels.append(labels)
        all_logits.append(logits)
    expected = _reference(np.concatenate(all_labels), np.concatenate(all_logits))
    assert float(metric.result()) == pytest.approx(expected)
    assert 0 < expected < 1


def test_equals_greedy_exact_match_of_the_model():
    """Teacher-forced sequence accuracy == greedy decoding reproduces the label."""
    keras.utils.set_random_seed(3)
    model = build_transformer(9, 9, num_layers=1, d_model=16, num_heads=2, dff=32, max_length=8)
    kernel, bias = model.get_layer("logits").get_weights()
    bias[0] = -1e9  # greedy search never generates [PAD]; neither may the arg-max here
    model.get_layer("logits").set_weights([kernel, bias])
    rng = np.random.default_rng(3)
    source = np.concatenate(
        [np.full((16, 1), 2), rng.integers(4, 9, (16, 4)), np.full((16, 1), 3)], 1
    )
    decoded = greedy_search(
        IncrementalDecoder(model, 7), tf.constant(source, tf.int32), start_id=2, end_id=3
    ).numpy()  # (16, 6): what the model generates
    # Labels: the model's own output for half the rows, a changed token for the rest.
    labels = decoded.copy()
    labels[8:, 0] = np.where(labels[8:, 0] == 4, 5, 4)
    target_in = np.concatenate([np.full((16, 1), 2), labels[:, :-1]], 1)
    logits = model({"source": source, "target": target_in}, training=False)
    metric = MaskedSequenceAccuracy()
    metric.update_state(labels, logits)
    assert float(metric.result()) == pytest.approx(0.5)


class _Model:
    stop_training = False


def _stopping_epoch(callback, values):
    """The first epoch after which `callback` stops training on these rates (None: never)."""
    callback.set_model(_Model())
    for epoch, value in enumerate(values):
        callback.on_epoch_end(epoch, {"val_sequence_accuracy": value})
        if callback.model.stop_training:
            return epoch
    return None


@pytest.mark.parametrize(
    "values, stops_after",
    [
        ([0.5, 0.5, 0.5, 0.5], None),  # flat but below the floor: still learning
        ([0.95, 0.97, 0.971, 0.96], 3),  # two epochs without beating 0.97 by min_delta
        ([0.85, 0.95, 0.80, 0.99], None),  # one fall is not convergence
        ([0.85, 0.95, 0.80, 0.90], 3),  # two are
        ([0.5, 0.85, 0.86, 0.95], None),  # below the floor, then still gaining
        ([0.8, 1.0], 1),  # every sequence right
        ([0.95, float("nan"), 0.96, 0.99], None),  # NaN is skipped; still gaining
    ],
)
def test_converged_stops_on_a_plateau_above_the_floor(values, stops_after):
    callback = SequencesConverged(floor=0.9, min_delta=0.002, patience=2, ceiling=1.0)
    assert _stopping_epoch(callback, values) == stops_after


@pytest.mark.parametrize(
    "values, stops_after",
    [
        ([0.001, 0.38, 0.948, 0.856, 0.954], None),  # en->it under the paper's schedule
        ([0.01, 0.845, 0.985, 0.995, 0.999, 0.999], 4),  # 0.999 reached: converged
        ([0.999, 0.992], 0),  # en->fr: stop before the dip
        ([0.597, 0.992, 0.996, 0.995], 3),
        ([0.597, 0.992, 0.9985], None),  # still gaining, below the ceiling
    ],
)
def test_the_default_floor_waits_for_0_99(values, stops_after):
    assert _stopping_epoch(SequencesConverged(), values) == stops_after


def test_converged_ignores_models_without_the_metric():
    callback = SequencesConverged()
    callback.set_model(_Model())
    for epoch in range(3):
        callback.on_epoch_end(epoch, {"val_loss": 1.0})
    assert not callback.model.stop_training


def test_a_model_compiled_with_it_saves_and_loads(tmp_path):
    """train saves `model.keras` compiled with this metric: loading must find the class."""
    inputs = keras.Input((4,), dtype="int32")
    outputs = keras.layers.Embedding(5, 5)(inputs)
    model = keras.Model(inputs, outputs)
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=[MaskedSequenceAccuracy()])
    labels = np.array([[1, 2, 3, 0]])
    model.evaluate(labels, labels, verbose=0)
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    before = model.evaluate(labels, labels, verbose=0, return_dict=True)
    after = loaded.evaluate(labels, labels, verbose=0, return_dict=True)
    assert after["sequence_accuracy"] == before["sequence_accuracy"]
    assert type(loaded.metrics[-1].metrics[-1]) is MaskedSequenceAccuracy or any(
        isinstance(m, MaskedSequenceAccuracy) for m in loaded.metrics[-1].metrics
    )


def test_above_the_floor_the_planned_rate_first_decays_the_planned_rate_for_one_epoch():
    from keras_transformer.training.schedule import BudgetSchedule

    class Optimizer:
        iterations = 300
        _learning_rate = BudgetSchedule(7e-4, warmup_steps=100, total_steps=1200)

    model = _Model()
    model.optimizer = Optimizer()
    callback = SequencesConverged()
    callback.set_model(model)
    callback.set_params({"steps": 100})
    schedule = Optimizer._learning_rate
    callback.on_epoch_end(0, {"val_sequence_accuracy": 0.98})  # below the floor: no change
    assert schedule.total_steps == 1200 and not callback.cooling
    callback.on_epoch_end(1, {"val_sequence_accuracy": 0.993})  # above: one epoch of decay
    assert not model.stop_training and schedule.total_steps == 400  # decays to 0 by step 400
    assert float(schedule(399)) < 1e-7 < float(schedule(299))
    callback.on_epoch_end(3, {"val_sequence_accuracy": 0.999})
    assert model.stop_training
    # 0.999 (the ceiling) stops at once: nothing left to gain from a decay
    callback = SequencesConverged()
    callback.set_model(_Model())
    callback.on_epoch_end(0, {"val_sequence_accuracy": 0.9995})
    assert callback.model.stop_training
