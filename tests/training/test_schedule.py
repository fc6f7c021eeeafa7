"""Tests for keras_transformer.training.schedule.TransformerSchedule."""

import math

import keras
import numpy as np
import pytest

from keras_transformer.training import TransformerSchedule


def paper_rate(step, d_model, warmup_steps, scale=1.0):
    """Section 5.3, with the paper's 1-based step."""
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


@pytest.mark.parametrize("paper_step", [1, 2, 10, 1000, 3999, 4000, 4001, 10000, 100000])
def test_matches_paper_formula(paper_step):
    schedule = TransformerSchedule(d_model=512, warmup_steps=4000)
    # Keras iteration i is paper step i + 1.
    got = float(schedule(paper_step - 1))
    np.testing.assert_allclose(got, paper_rate(paper_step, 512, 4000), rtol=1e-6)


def test_first_iteration_is_small_positive_and_finite():
    rate = float(TransformerSchedule(d_model=128)(0))
    assert 0.0 < rate < 1e-5
    assert math.isfinite(rate)


def test_peak_at_warmup_steps():
    schedule = TransformerSchedule(d_model=64, warmup_steps=50)
    rates = np.array([float(schedule(i)) for i in range(200)])
    assert int(np.argmax(rates)) == 50 - 1  # paper step 50
    np.testing.assert_allclose(rates.max(), (64 * 50) ** -0.5, rtol=1e-6)
    np.testing.assert_allclose(schedule.peak_learning_rate, (64 * 50) ** -0.5, rtol=1e-12)


def test_monotone_up_then_down():
    schedule = TransformerSchedule(d_model=32, warmup_steps=40)
    rates = np.array([float(schedule(i)) for i in range(160)])
    assert np.all(np.diff(rates[:40]) > 0)  # linear warm-up
    assert np.all(np.diff(rates[39:]) < 0)  # inverse-square-root decay
    # Linear warm-up: rate proportional to the step.
    np.testing.assert_allclose(rates[:40] / rates[0], np.arange(1, 41), rtol=1e-5)


def test_scale_multiplies_every_rate():
    base = TransformerSchedule(d_model=16, warmup_steps=10)
    scaled = TransformerSchedule(d_model=16, warmup_steps=10, scale=2.5)
    for step in [0, 5, 9, 50]:
        np.testing.assert_allclose(float(scaled(step)), 2.5 * float(base(step)), rtol=1e-6)


def test_accepts_tensor_and_variable_steps_and_returns_float32():
    schedule = TransformerSchedule(d_model=16, warmup_steps=10)
    for step in [keras.ops.convert_to_tensor(7, "int64"), keras.Variable(7, dtype="int64")]:
        rate = schedule(step)
        assert keras.backend.standardize_dtype(rate.dtype) == "float32"
        np.testing.assert_allclose(float(rate), paper_rate(8, 16, 10), rtol=1e-6)


def test_config_round_trip():
    schedule = TransformerSchedule(d_model=256, warmup_steps=123, scale=0.5)
    config = schedule.get_config()
    assert config == {"d_model": 256, "warmup_steps": 123, "scale": 0.5}
    clone = TransformerSchedule.from_config(config)
    assert clone.get_config() == config
    assert float(clone(77)) == float(schedule(77))


def test_registered_serialization_round_trip():
    schedule = TransformerSchedule(d_model=64, warmup_steps=20, scale=3.0)
    serialized = keras.saving.serialize_keras_object(schedule)
    assert serialized["registered_name"] == "keras_transformer>TransformerSchedule"
    clone = keras.saving.deserialize_keras_object(serialized)
    assert isinstance(clone, TransformerSchedule)
    assert clone.get_config() == schedule.get_config()


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"d_model": 0}, ValueError, "d_model=0"),
        ({"d_model": -8}, ValueError, "d_model=-8"),
        ({"d_model": 12.5}, TypeError, "d_model=12.5"),
        ({"d_model": "512"}, TypeError, "d_model='512'"),
        ({"d_model": True}, TypeError, "d_model=True"),
        ({"d_model": 8, "warmup_steps": 0}, ValueError, "warmup_steps=0"),
        ({"d_model": 8, "warmup_steps": -1}, ValueError, "warmup_steps=-1"),
        ({"d_model": 8, "warmup_steps": 4000.0}, TypeError, "warmup_steps=4000.0"),
        ({"d_model": 8, "scale": 0.0}, ValueError, "scale=0.0"),
        ({"d_model": 8, "scale": -1.0}, ValueError, "scale=-1.0"),
        ({"d_model": 8, "scale": float("inf")}, ValueError, "scale=inf"),
        ({"d_model": 8, "scale": float("nan")}, ValueError, "scale=nan"),
        ({"d_model": 8, "scale": "2"}, TypeError, "scale='2'"),
    ],
)
def test_invalid_arguments_raise_clear_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        TransformerSchedule(**kwargs)


def test_drives_adam_step_by_step():
    schedule = TransformerSchedule(d_model=16, warmup_steps=10)
    optimizer = keras.optimizers.Adam(schedule, beta_1=0.9, beta_2=0.98, epsilon=1e-9)
    variable = keras.Variable(np.ones((3,), "float32"))
    optimizer.build([variable])
    for iteration in range(3):
        np.testing.assert_allclose(
            float(optimizer.learning_rate), paper_rate(iteration + 1, 16, 10), rtol=1e-6
        )
        optimizer.apply_gradients([(keras.ops.ones((3,)), variable)])
    assert int(optimizer.iterations) == 3


def _tiny_regression_model():
    inputs = keras.Input((4,))
    outputs = keras.layers.Dense(2, name="dense")(inputs)
    return keras.Model(inputs, outputs)


def test_optimizer_and_schedule_survive_keras_save_and_load(tmp_path):
    keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).normal(size=(8, 4)).astype("float32")
    y = np.random.default_rng(1).normal(size=(8, 2)).astype("float32")
    model = _tiny_regression_model()
    schedule = TransformerSchedule(d_model=16, warmup_steps=5, scale=2.0)
    model.compile(
        optimizer=keras.optimizers.Adam(schedule, beta_1=0.9, beta_2=0.98, epsilon=1e-9),
        loss="mse",
    )
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)  # 2 updates
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)

    config = loaded.optimizer.get_config()
    assert config["beta_2"] == 0.98 and config["epsilon"] == 1e-9
    restored = keras.saving.deserialize_keras_object(config["learning_rate"])
    assert isinstance(restored, TransformerSchedule)
    assert restored.get_config() == schedule.get_config()
    assert int(loaded.optimizer.iterations) == 2
    np.testing.assert_allclose(
        float(loaded.optimizer.learning_rate), float(model.optimizer.learning_rate), rtol=1e-7
    )

    # Training resumes identically: Adam moments and the step count were restored.
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    loaded.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    for expected, got in zip(model.get_weights(), loaded.get_weights(), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
