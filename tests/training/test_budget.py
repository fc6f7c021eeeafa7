"""Tests for training to a time budget: schedule.BudgetSchedule, callbacks.TimeBudget and
_validation.parse_duration."""

import math

import keras
import numpy as np
import pytest

from keras_transformer._validation import parse_duration
from keras_transformer.training import callbacks as callbacks_module
from keras_transformer.training.callbacks import TimeBudget
from keras_transformer.training.schedule import BudgetSchedule


@pytest.mark.parametrize(
    "text, seconds",
    [("10m", 600.0), ("90s", 90.0), ("90", 90.0), ("1.5h", 5400.0), (" 2 min ", 120.0), (45, 45.0)],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["ten minutes", "10x", "", "-5m", "0s", 0, True, None, math.inf])
def test_parse_duration_rejects_bad_input_naming_it(text):
    with pytest.raises(ValueError, match="time budget"):
        parse_duration(text)


def test_schedule_warms_up_linearly_then_decays_to_final_at_total():
    schedule = BudgetSchedule(2e-3, warmup_steps=10, total_steps=110, final_fraction=0.1)
    rates = np.array([float(schedule(i)) for i in range(130)])
    np.testing.assert_allclose(rates[:10], 2e-3 * np.arange(1, 11) / 10, rtol=1e-5)
    assert int(np.argmax(rates)) == 9  # the peak on the warmup_steps-th update
    assert np.all(np.diff(rates[9:110]) < 0)  # strictly down during the decay
    np.testing.assert_allclose(rates[109], 2e-4, rtol=1e-4)  # step total_steps: final rate
    # After the end (a fit of the loaded model), the held rate: not 0, and not a new peak.
    np.testing.assert_allclose(rates[110:], 2e-3 * schedule.hold_fraction, rtol=1e-4)
    assert 0.0 < schedule.hold_fraction < 1.0
    # Half-way through the decay, the cosine is at its middle.
    np.testing.assert_allclose(rates[59], 2e-3 * (0.1 + 0.9 * 0.5), rtol=1e-4)


def test_set_total_steps_moves_the_end_and_keeps_it_after_warmup():
    schedule = BudgetSchedule(1e-3, warmup_steps=10, total_steps=100)
    early = float(schedule(49))
    schedule.set_total_steps(1000)
    assert schedule.total_steps == 1000
    assert float(schedule(49)) > early  # later end: less decayed at the same step
    schedule.set_total_steps(3)
    assert schedule.total_steps == 11  # never inside the warm-up
    assert float(schedule(10)) == pytest.approx(0.0, abs=1e-9)


def test_schedule_config_round_trip_and_keras_deserialize():
    schedule = BudgetSchedule(5e-4, warmup_steps=20, total_steps=300, final_fraction=0.05)
    schedule.set_total_steps(400)
    config = keras.optimizers.schedules.serialize(schedule)
    again = keras.optimizers.schedules.deserialize(config)
    assert isinstance(again, BudgetSchedule)
    assert again.get_config() == schedule.get_config()
    assert again.total_steps == 400
    for step in (0, 19, 150, 399, 500):
        assert float(again(step)) == pytest.approx(float(schedule(step)))


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(peak_learning_rate=0.0), ValueError, "peak_learning_rate"),
        (dict(peak_learning_rate=1e-3, warmup_steps=0), ValueError, "warmup_steps"),
        (dict(peak_learning_rate=1e-3, warmup_steps=2.5), TypeError, "warmup_steps"),
        (dict(peak_learning_rate=1e-3, total_steps=-1), ValueError, "total_steps"),
        (dict(peak_learning_rate=1e-3, final_fraction=1.0), ValueError, "final_fraction"),
    ],
)
def test_schedule_rejects_bad_arguments_naming_them(kwargs, error, name):
    with pytest.raises(error, match=name):
        BudgetSchedule(**kwargs)


class FakeClock:
    """Advances one second each time it is read."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 1.0
        return self.now


def _tiny_fit(callback, batches=40, epochs=3):
    keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).normal(size=(batches * 2, 3)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    schedule = callback.schedule or 1e-2
    model.compile(optimizer=keras.optimizers.Adam(schedule), loss="mse")
    history = model.fit(x, y, batch_size=2, epochs=epochs, callbacks=[callback], verbose=0)
    return model, history


def test_time_budget_stops_at_the_budget_and_shapes_the_schedule(monkeypatch):
    callback = TimeBudget(10, clock="wall", update_every=2)
    clock = FakeClock()
    monkeypatch.setattr(callback, "_now", clock)
    schedule = BudgetSchedule(1e-2, warmup_steps=2, total_steps=10_000)
    callback.schedule = schedule
    model, history = _tiny_fit(callback)
    # One clock read at train start and one per batch: the 10th batch reaches 10 s.
    assert int(model.optimizer.iterations.numpy()) == 10
    assert callback.stopped_step == 10
    assert len(history.history["loss"]) == 1  # stopped inside the first of 3 epochs
    # The pace was one step per second, so the decay was moved to end near the budget.
    assert 9 <= schedule.total_steps <= 12


def test_time_budget_lets_short_training_finish(monkeypatch):
    callback = TimeBudget("1h", clock="process")
    monkeypatch.setattr(callback, "_now", FakeClock())
    model, history = _tiny_fit(callback, batches=5, epochs=2)
    assert int(model.optimizer.iterations.numpy()) == 10
    assert callback.stopped_step is None
    assert len(history.history["loss"]) == 2


def test_time_budget_uses_process_time_for_the_process_clock():
    assert TimeBudget(5, clock="process")._now is callbacks_module.time.process_time
    assert TimeBudget(5, clock="wall")._now is callbacks_module.time.perf_counter


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(budget_seconds="soon"), "time budget"),
        (dict(budget_seconds=10, clock="cpu"), "clock='cpu'"),
        (dict(budget_seconds=10, schedule=0.001), "BudgetSchedule"),
        (dict(budget_seconds=10, update_every=0), "update_every"),
    ],
)
def test_time_budget_rejects_bad_arguments(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        TimeBudget(**kwargs)


def test_a_budget_spent_at_an_epoch_end_says_it_stopped_training(monkeypatch):
    # 5 batches an epoch, one second each: the 5th batch ends the epoch at 5 s, and the
    # epoch-end read (6 s) is the first past a 5.5 s budget; before, stopped_step stayed None.
    callback = TimeBudget(5.5, clock="wall")
    monkeypatch.setattr(callback, "_now", FakeClock())
    model, history = _tiny_fit(callback, batches=5, epochs=3)
    assert len(history.history["loss"]) == 1
    assert callback.stopped and callback.stopped_step == 5


def test_time_budget_reports_time_per_epoch_not_epoch_counts(monkeypatch, caplog):
    callback = TimeBudget(100, clock="wall", progress=True)
    monkeypatch.setattr(callback, "_now", FakeClock())
    with caplog.at_level("INFO", logger="keras_transformer.progress"):
        _tiny_fit(callback, batches=5, epochs=2)
    lines = [r.getMessage() for r in caplog.records if r.name == "keras_transformer.progress"]
    # clock reads: start 1, batches 2..6, epoch end 7 -> 6 s; then 8..12, 13 -> 12 s
    assert lines[0].startswith("epoch 1: 6 s of 100 s (94 s left), loss ")
    assert lines[1].startswith("epoch 2: 12 s of 100 s (88 s left), loss ")
    assert not callback.stopped


def test_short_epochs_do_not_flood_the_output(monkeypatch, caplog):
    """A line at most every `progress_seconds` (5 s for 100 s), and the first and last."""
    callback = TimeBudget(100, clock="wall", progress=True)
    monkeypatch.setattr(callback, "_now", FakeClock())
    with caplog.at_level("INFO", logger="keras_transformer.progress"):
        _, history = _tiny_fit(callback, batches=1, epochs=20)  # a few clock reads an epoch
    lines = [r.getMessage() for r in caplog.records if r.name == "keras_transformer.progress"]
    shown = [int(line.split(":")[0].split()[1]) for line in lines]
    used = [float(line.split(": ", 1)[1].split(" s of")[0]) for line in lines]
    epochs = len(history.history["loss"])
    assert epochs > 10 and shown[0] == 1 and shown[-1] == epochs and len(shown) < epochs / 2
    assert all(
        b - a >= callbacks_module.progress_seconds(100)
        for a, b in zip(used, used[1:-1], strict=False)
    )


def test_time_budget_times_its_reserve_again_near_the_end_and_trains_into_what_it_frees(
    monkeypatch, caplog
):
    # 5 batches an epoch, one clock second per read (a timing of the reserve takes one too):
    # with 10 s of the 30 s budget kept for after training, the stop is near (within two
    # epochs) from the end of epoch 2 on; the reserve timed again there is 2 s, and training
    # goes on to 28 s: 4 epochs, against 3 epochs and 2 batches.
    def fit(update_reserve):
        callback = TimeBudget(30, clock="wall", reserve_seconds=10, update_reserve=update_reserve)
        monkeypatch.setattr(callback, "_now", FakeClock())
        model, _ = _tiny_fit(callback, batches=5, epochs=10)
        return callback, int(model.optimizer.iterations.numpy())

    calls = []
    kept, kept_steps = fit(None)
    with caplog.at_level("INFO", logger="keras_transformer.training.callbacks"):
        updated, steps = fit(lambda: calls.append(len(calls)) or 2.0)
    assert kept.reserve_seconds == 10 and kept_steps == 17  # stops at 20 s
    assert updated.reserve_seconds == 2.0 and steps == 20
    assert len(calls) == 3  # epochs 2, 3 and 4; not epoch 1: the stop was 14 s away then
    assert "10 s" in caplog.text and "epoch 2" in caplog.text


def test_time_budget_rejects_a_negative_updated_reserve(monkeypatch):
    callback = TimeBudget(30, clock="wall", reserve_seconds=10, update_reserve=lambda: -1.0)
    monkeypatch.setattr(callback, "_now", FakeClock())
    with pytest.raises(ValueError, match="update_reserve"):
        _tiny_fit(callback, batches=5, epochs=10)


class _Steps(keras.callbacks.Callback):
    """Before every update: its schedule step (iteration + 1) and the schedule's end."""

    def __init__(self, schedule):
        super().__init__()
        self.schedule, self.seen = schedule, []

    def on_train_batch_begin(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy()) + 1
        self.seen.append((step, self.schedule.total_steps))


def test_time_budget_keeps_the_decay_ahead_of_training_so_the_hold_rate_never_trains(
    monkeypatch,
):
    # The first estimate (12 steps) is far short and no re-estimate is due (update_every):
    # past step 12 the schedule would hold hold_fraction of the peak, meant for a later fit.
    callback = TimeBudget(1000, clock="wall", update_every=1000)
    monkeypatch.setattr(callback, "_now", FakeClock())
    callback.schedule = BudgetSchedule(1e-2, warmup_steps=2, total_steps=12)
    steps = _Steps(callback.schedule)
    keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).normal(size=(60, 3)).astype("float32")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(callback.schedule), loss="mse")
    model.fit(x, x[:, :1], batch_size=2, epochs=1, callbacks=[callback, steps], verbose=0)
    assert len(steps.seen) == 30
    past = [(step, total) for step, total in steps.seen if step > total]
    assert not past, f"updates past the decay's end (step, total_steps): {past}"
