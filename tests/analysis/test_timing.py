"""Wall-clock helpers: the measurement runs; the fit and the crossover are exact on known curves.

No assertion here depends on how fast this machine is.
"""

import logging

import numpy as np
import pytest

from keras_transformer.analysis import first_length_slower, fit_time_curve, time_step, timing_sweep


def test_time_step_runs_every_kind():
    sweep = timing_sweep(("self_attention", "lstm", "convolution"), [4, 8], 4, repeats=1)
    assert set(sweep) == {"self_attention", "lstm", "convolution"}
    assert all(len(v) == 2 and min(v) > 0 for v in sweep.values())
    assert time_step("gru", 4, 4, batch=2, repeats=2) > 0


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
