"""The figures of the Transformer-versus-RNN comparison, from `run_comparison`'s results.

Each function draws one figure of `keras-transformer compare` on its own `Figure` (no pyplot)
and returns the PNG's path; `PLOTS` names them by file, as `write_comparison` writes them.
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from keras_transformer.visualization.figures import figure
from keras_transformer.visualization.figures import save as _save


def _finish(ax, path, xlabel, ylabel, title, fontsize=8, y_base=None, log_x=True):
    if log_x:
        ax.set_xscale("log", base=2)
    if y_base:
        ax.set_yscale("log", base=y_base)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=fontsize)
    return _save(ax.figure, path)


def _axes():
    return figure(figsize=(6, 4.5))[1]


def plot_operations(results: dict[str, Any], path: str) -> str:
    """Measured FLOPs (dots) and formulas (lines) against `T`, log-log."""
    measured, d, ax = results["measured"], results["measured"]["d"], _axes()
    for kind in results["measured"]["layers"]:
        formula = results["analytic"]["flops"][kind]
        (line,) = ax.plot(measured["lengths"], formula, "-", label=f"{kind} formula")
        ax.plot(measured["lengths"], measured["layers"][kind]["flops"], "o", color=line.get_color())
    ax.axvline(d, color="grey", ls=":", label=f"T = d = {d}")
    title = f"Operations per layer, d = {d} (dots: counted in the traced graph)"
    return _finish(ax, path, "sequence length T", "forward FLOPs (batch 1)", title, 7, 10)


def plot_sequential_steps(results: dict[str, Any], path: str) -> str:
    """Critical path (matrix products in sequence) of the traced graph against `T`."""
    measured, ax = results["measured"], _axes()
    styles = {"self_attention": "o-", "rnn": "s-", "lstm": "x--", "convolution": "^-"}
    for kind in results["measured"]["layers"]:
        path_lengths = measured["layers"][kind]["critical_path"]
        ax.plot(measured["lengths"], path_lengths, styles.get(kind, "o-"), label=kind)
    loop = measured["recurrent_loop"]
    ax.plot(loop["lengths"], loop["steps"], "k*", markersize=9, label="LSTM while-loop iterations")
    ylabel = "matrix products that must run in sequence"
    title = "Critical path: grows with T for the loop, constant otherwise"
    return _finish(ax, path, "sequence length T", ylabel, title, y_base=2)


def plot_gradients(results: dict[str, Any], path: str) -> str:
    """Mean `|| d y_T / d x_t ||` against the distance `T - t`, log scale."""
    grad, ax = results["gradients"], _axes()
    for kind, curve in grad["curves"].items():
        norms, distance = np.asarray(curve["norm"]), np.asarray(curve["distance"])
        ax.semilogy(distance[norms > 0], norms[norms > 0], ".-", label=kind)
    title = "Path length through gradients (T = {length}, d = {d}, {seeds} seeds)".format(**grad)
    ylabel = "gradient norm of the last output"
    return _finish(ax, path, "distance T - t", ylabel, title, log_x=False)


def plot_timing(results: dict[str, Any], path: str) -> str:
    """Median forward + backward seconds against `T`, log-log, with the attention fit."""
    spec, fit, ax = results["timing"], results["timing"]["self_attention_fit"], _axes()
    lengths = np.asarray(spec["lengths"], dtype="float64")
    for kind in spec["kinds"]:
        ax.plot(lengths, spec["seconds"][kind], "o-", label=kind)
    dense = np.geomspace(lengths[0], lengths[-1], 100)
    curve = fit["a"] + fit["b"] * dense + fit["c"] * dense**2
    ax.plot(dense, curve, "--", color="grey", label="attention fit a + bT + cT^2")
    at = spec["analytic_quadratic_overtakes_linear_at"]
    ax.axvline(at, color="grey", ls="-.", label=f"2 T^2 d > 4 T d^2 from T = 2d = {at}")
    at = fit["quadratic_overtakes_linear_at"]
    if at and lengths[0] <= at <= lengths[-1]:  # a fit says nothing outside its lengths
        ax.axvline(at, color="red", ls=":", label=f"cT^2 > bT from T = {at:.0f}")
    title = f"Wall clock, d = {spec['d']}, batch {spec['batch']}, {spec['device']}"
    return _finish(ax, path, "sequence length T", "seconds per forward + backward", title, 7, 10)


def plot_long_range(results: dict[str, Any], path: str) -> str:
    """Recall accuracy against distance, one line per model, with chance."""
    lr, ax = results["long_range"], _axes()
    for name, accuracy in lr["accuracy"].items():
        ax.plot(lr["distances"], accuracy, "o-", label=name)
    ax.axhline(lr["chance"], color="grey", ls=":", label="chance")
    ax.set_ylim(0, 1.05)
    xlabel = "distance of the recalled symbol from the end"
    return _finish(ax, path, xlabel, "test accuracy", "Long-range recall after brief training")


PLOTS: dict[str, Callable[[dict[str, Any], str], str]] = {
    "operations.png": plot_operations,
    "sequential_steps.png": plot_sequential_steps,
    "gradient_norms.png": plot_gradients,
    "timing.png": plot_timing,
    "long_range.png": plot_long_range,
}
"""The figures `write_comparison` draws, by file name."""
