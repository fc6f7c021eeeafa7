"""Wall-clock helpers: the measurement runs; the fit and the crossover are exact on known curves.

No assertion here depends on how fast this machine is.
"""

import logging

import numpy as np
import pytest

from keras_transformer.analysis import first_length_slower, fit_time_curve, time_step, timing_sweep


class _ScriptedClock:
    """`perf_counter` whose successive timed runs last the given seconds (start, end pairs)."""

    def __init__(self, durations):
        self.readings = [t for d in durations for t in (0.0, d)]
        self.calls = 0

    def perf_counter(self):
        self.calls += 1
        return self.readings.pop(0)


@pytest.mark.parametrize("kind", ["self_attention", "lstm", "gru", "convolution"])
def test_time_step_runs_the_layer_and_returns_the_statistic_of_the_timed_runs(kind, monkeypatch):
    """The step runs for real on every kind; the clock is scripted, so the result must be
    exactly the median (or the minimum) of the three timed runs, and the warm-up untimed."""
    from keras_transformer.analysis import timing

    for statistic, expected in (("median", 3.0), ("min", 1.0)):
        clock = _ScriptedClock([3.0, 1.0, 8.0])  # mean 4: only the median gives 3
        monkeypatch.setattr(timing, "time", clock)
        assert time_step(kind, 4, 4, batch=2, repeats=3, statistic=statistic) == expected
        assert clock.calls == 6  # two readings per timed run, none for the warm-up


def test_timing_sweep_times_every_kind_at_every_length_in_order(monkeypatch):
    from keras_transformer.analysis import timing

    calls = []

    def fake_time_step(kind, length, d, **kwargs):
        calls.append((kind, length, d, kwargs))
        return float(length)

    monkeypatch.setattr(timing, "time_step", fake_time_step)
    sweep = timing_sweep(("lstm", "convolution"), [4, 8, 16], 2, repeats=7)
    assert sweep == {"lstm": [4.0, 8.0, 16.0], "convolution": [4.0, 8.0, 16.0]}
    assert [(k, t) for k, t, _, _ in calls] == [
        ("lstm", 4), ("lstm", 8), ("lstm", 16),
        ("convolution", 4), ("convolution", 8), ("convolution", 16),
    ]  # fmt: skip
    assert all(d == 2 and kwargs == {"repeats": 7} for _, _, d, kwargs in calls)


def test_sweep_does_not_make_tensorflow_warn_about_retracing():
    """Tutorial 10's sweep printed "triggered tf.function retracing" (a function per call)."""
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("tensorflow")
    logger.addHandler(handler)
    try:
        timing_sweep(("convolution",), [2, 3, 4, 5, 6, 7, 8], 4, repeats=1)
    finally:
        logger.removeHandler(handler)
    retracing = [r.getMessage() for r in records if "retracing" in r.getMessage()]
    assert not retracing, retracing[0]


def test_fit_recovers_the_quadratic_crossover():
    lengths = np.array([16, 64, 256, 1024])
    seconds = 1e-4 + 3e-6 * lengths + 1e-8 * lengths**2
    fit = fit_time_curve(lengths, seconds)
    assert fit["quadratic_overtakes_linear_at"] == pytest.approx(300)
    assert fit_time_curve([1, 2, 3], [1.0, 2.0, 3.0])["quadratic_overtakes_linear_at"] is None
    # Dominated by the longest length, an absolute fit would give b < 0 here; the
    # relative, non-negative fit keeps every term >= 0.
    # (self-attention, d = 64, measured on a 2-core CPU)
    lengths = [32, 64, 128, 256, 512, 1024, 2048, 4096]
    seconds = [0.00292, 0.00256, 0.00329, 0.00405, 0.00612, 0.00865, 0.0206, 0.12]
    measured = fit_time_curve(lengths, seconds)
    assert min(measured["a"], measured["b"], measured["c"]) >= 0
    assert 300 < measured["quadratic_overtakes_linear_at"] < 700
    with pytest.raises(ValueError, match="at least 3"):
        fit_time_curve([1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="must all be > 0"):
        fit_time_curve([1, 2, 3], [1.0, 0.0, 2.0])


def test_first_length_slower():
    assert first_length_slower([1, 2, 3], [1.0, 5.0, 6.0], [2.0, 2.0, 2.0]) == 2
    assert first_length_slower([1, 2, 3], [5.0, 1.0, 6.0], [2.0, 2.0, 2.0]) == 3
    assert first_length_slower([1, 2], [1.0, 1.0], [2.0, 2.0]) is None


def test_the_lstm_pays_for_its_sequential_steps():
    """Direction, not speed: 16x the steps must cost at least 2x the time.

    An LSTM of width 8 does little work per step, so its forward + backward time
    follows its T sequential steps (measured ~10-16x from T = 16 to 256). Short
    and long are measured back to back in 5 interleaved pairs (each the fastest
    of 3 runs: other work on a shared machine only ever slows a run down), and
    the median of the 5 pair ratios is compared: a burst of load flips it only
    if it slows the short run 5x or more in 3 of the 5 pairs. One measurement,
    no retries; the 2x threshold is 5x or more below what an idle machine gives.
    """
    ratios = []
    for _ in range(5):
        short = time_step("lstm", 16, 8, repeats=3, statistic="min")
        long = time_step("lstm", 256, 8, repeats=3, statistic="min")
        ratios.append(long / short)
    assert float(np.median(ratios)) >= 2, ratios
    with pytest.raises(ValueError, match="statistic='mean'"):
        time_step("lstm", 4, 4, statistic="mean")
