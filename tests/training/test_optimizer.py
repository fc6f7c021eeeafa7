"""Tests for keras_transformer.training.optimizer.make_optimizer."""

import keras
import numpy as np
import pytest

from keras_transformer.training import TransformerSchedule, make_optimizer
from keras_transformer.training.optimizer import paper_adam


def test_paper_hyperparameters_and_schedule():
    optimizer = make_optimizer(d_model=64, warmup_steps=100)
    assert isinstance(optimizer, keras.optimizers.Adam)
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.98, 1e-9)
    schedule = keras.saving.deserialize_keras_object(optimizer.get_config()["learning_rate"])
    assert isinstance(schedule, TransformerSchedule)
    assert schedule.get_config() == {"d_model": 64, "warmup_steps": 100, "scale": 1.0}
    np.testing.assert_allclose(float(optimizer.learning_rate), 64**-0.5 * 100**-1.5, rtol=1e-6)


def test_adam_kwargs_override_and_scale():
    optimizer = make_optimizer(16, 10, scale=2.0, beta_2=0.997, clipnorm=1.0)
    assert optimizer.beta_2 == 0.997
    assert optimizer.beta_1 == 0.9
    assert optimizer.clipnorm == 1.0
    np.testing.assert_allclose(float(optimizer.learning_rate), 2.0 * 16**-0.5 * 10**-1.5, rtol=1e-6)


def test_learning_rate_argument_is_rejected():
    with pytest.raises(ValueError, match="learning_rate=0.001 cannot be passed"):
        make_optimizer(16, learning_rate=0.001)


def test_invalid_schedule_arguments_are_reported():
    with pytest.raises(ValueError, match="warmup_steps=0"):
        make_optimizer(16, warmup_steps=0)


def test_compile_model_builds_the_optimizer_so_fit_traces_its_step_once(monkeypatch):
    """`compile_model` makes Adam's moments when it compiles: made inside `fit`'s first traced
    step instead, they made TensorFlow trace that step twice (benchmarks/first_epoch.py)."""
    from types import SimpleNamespace

    from keras_transformer.models import build_transformer
    from keras_transformer.training.fitting import compile_model

    traces = []
    train_step = keras.Model.train_step
    monkeypatch.setattr(
        keras.Model, "train_step", lambda self, data: traces.append(1) or train_step(self, data)
    )
    model = build_transformer(30, 30, num_layers=1, d_model=8, num_heads=2, dff=16, max_length=7)
    plan = SimpleNamespace(
        learning_rate=1e-3, settings=SimpleNamespace(label_smoothing=0.0), xla=False
    )
    compile_model(model, plan)
    assert model.optimizer.built and len(model.optimizer.variables) > 2  # the moments exist
    rng = np.random.default_rng(0)
    inputs = {"source": rng.integers(1, 30, (8, 6)), "target": rng.integers(1, 30, (8, 6))}
    model.fit(inputs, rng.integers(1, 30, (8, 6)), batch_size=4, epochs=1, verbose=0)
    assert len(traces) == 1


@pytest.mark.parametrize(
    "rate, error",
    [(0.0, ValueError), (-1e-3, ValueError), (float("nan"), ValueError), (True, TypeError)],
)
def test_paper_adam_refuses_a_rate_that_is_not_a_positive_number(rate, error):
    with pytest.raises(error, match="learning_rate"):
        paper_adam(rate)
