"""Transformers against RNNs and CNNs, measured: the course's central argument as one report.

`run_comparison` measures every column of Table 1 of the paper (operations, sequential steps,
maximum path length) for self-attention, recurrent and convolutional layers, plus gradient norms
against distance, wall clock against length and long-range recall after brief training;
`write_comparison` writes `comparison.json`, `comparison.md` and `plots/`;
`keras-transformer compare` calls both.
"""

import copy
import json
import os
import platform
import time
from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

from keras_transformer._validation import check_choice
from keras_transformer.analysis import complexity, gradients, long_range, operations
from keras_transformer.analysis.timing import first_length_slower, fit_time_curve, timing_sweep
from keras_transformer.choices import COMPARISON_SIZES
from keras_transformer.visualization.comparison_figures import PLOTS

SIZES: dict[str, dict[str, Any]] = {
    "tiny": {
        "operations": {"lengths": [4, 8, 16], "d": 8, "kernel_size": 3},
        "loop_lengths": [3, 5],
        "gradients": {"length": 12, "d": 8, "seeds": 1},
        "timing": {"lengths": [8, 16, 32], "d": 8, "batch": 1, "repeats": 1},
        "long_range": {
            "distances": [1, 3],
            "models": ["transformer", "rnn", "cnn"],
            "num_train": 64,
            "num_test": 16,
            "epochs": 1,
            "d_model": 8,
            "num_layers": 1,
            "run_eagerly": True,
        },
    },
    "quick": {
        "operations": {"lengths": [16, 32, 64, 128], "d": 32, "kernel_size": 3},
        "loop_lengths": [8, 32, 128],
        "gradients": {"length": 64, "d": 32, "seeds": 3},
        "timing": {"lengths": [32, 64, 128, 256, 512, 1024], "d": 32, "batch": 1, "repeats": 5},
        "long_range": {
            # No CNN in the quick run, to keep it short (the full run keeps it). Its training
            # used to stick at chance even at distance 1 (seen 0.08-0.8): unscaled dot-product
            # attention over LayerNorm outputs saturated the softmax; the scores are now scaled.
            "distances": [1, 8],
            "models": ["transformer", "rnn"],
            "num_train": 2000,
            "num_test": 200,
            "epochs": 8,
            "d_model": 32,
            "num_layers": 1,
        },
    },
    "full": {
        "operations": {"lengths": [16, 32, 64, 128, 256], "d": 64, "kernel_size": 3},
        "loop_lengths": [8, 32, 128, 512],
        "gradients": {"length": 128, "d": 64, "seeds": 5},
        "timing": {
            "lengths": [32, 64, 128, 256, 512, 1024, 2048, 4096],
            "d": 64,
            "batch": 1,
            "repeats": 5,
        },
        "long_range": {
            "distances": [1, 2, 4, 8, 16],
            "models": ["transformer", "rnn", "rnn_attention", "cnn"],
            "num_train": 3000,
            "num_test": 200,
            "epochs": 8,
            "d_model": 32,
            "num_layers": 2,
        },
    },
}
"""Settings of each size of `run_comparison` (its keys are `choices.COMPARISON_SIZES`): `"tiny"` (seconds, for tests; the numbers only
show the directions), `"quick"` (a few minutes on a 2-core CPU, `compare --quick`), `"full"`
(the default, under 20 minutes on a 2-core CPU)."""

OPERATION_KINDS = ("self_attention", "rnn", "lstm", "convolution")
TIMING_KINDS = ("self_attention", "lstm", "convolution")
GRADIENT_KINDS = ("rnn", "lstm", "transformer", "cnn")


def _formula_flops(kind: str, lengths: list[int], d: int, k: int) -> list[int]:
    return [complexity.layer_flops(kind, t, d, k) for t in lengths]


def _analytic(settings: dict[str, Any]) -> dict[str, Any]:
    lengths, d, k = (settings["operations"][key] for key in ("lengths", "d", "kernel_size"))
    flops = {kind: _formula_flops(kind, lengths, d, k) for kind in OPERATION_KINDS}
    crossover = {"table_terms": complexity.operations_crossover(d)}
    for rnn in ("rnn", "lstm"):
        crossover[f"exact_vs_{rnn}"] = complexity.operations_crossover(d, rnn, exact=True)
    table = complexity.complexity_table(lengths[-1], d, k, OPERATION_KINDS)
    return {
        "d": d,
        "kernel_size": k,
        "length": lengths[-1],
        "table": table,
        "lengths": lengths,
        "flops": flops,
        "crossover": crossover,
    }


def _measured(settings: dict[str, Any]) -> dict[str, Any]:
    lengths, d, k = (settings["operations"][key] for key in ("lengths", "d", "kernel_size"))
    measured = operations.measure_operations(lengths, d, OPERATION_KINDS, k)
    for kind, values in measured.items():
        values["flops_equal_formula"] = values["flops"] == _formula_flops(kind, lengths, d, k)
        parameters = complexity.layer_parameters(kind, d, k)
        values["parameters_equal_formula"] = all(p == parameters for p in values["parameters"])
        values["flops_growth_exponent"] = operations.growth_exponent(lengths, values["flops"])
    loop_lengths = settings["loop_lengths"]
    steps = [operations.count_recurrent_steps(t, d=8) for t in loop_lengths]
    return {
        "d": d,
        "kernel_size": k,
        "lengths": lengths,
        "layers": measured,
        "recurrent_loop": {"lengths": loop_lengths, "steps": steps},
    }


def _timing(settings: dict[str, Any]) -> dict[str, Any]:
    spec = settings["timing"]
    lengths, d = spec["lengths"], spec["d"]
    seconds = timing_sweep(TIMING_KINDS, lengths, d, batch=spec["batch"], repeats=spec["repeats"])
    attention = seconds["self_attention"]
    result = {**spec, "kinds": list(TIMING_KINDS), "seconds": seconds}
    result["self_attention_fit"] = fit_time_curve(lengths, attention)
    # slope of log time against log T over the three longest lengths: ~2 once the
    # T^2 term dominates, ~1 for a cost linear in T
    result["time_growth_exponent"] = {
        kind: operations.growth_exponent(lengths[-3:], seconds[kind][-3:]) for kind in TIMING_KINDS
    }
    result["analytic_quadratic_overtakes_linear_at"] = 2 * d
    for kind in ("lstm", "convolution"):
        slower = first_length_slower(lengths, attention, seconds[kind])
        result[f"self_attention_slower_than_{kind}_from"] = slower
    result["device"] = "GPU" if tf.config.list_physical_devices("GPU") else "CPU"
    result["cpu_count"] = os.cpu_count()
    return result


def run_comparison(
    size: str = "full", *, seed: int = 0, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Measures the complexity table, gradients, timings and long-range accuracy.

    Args:
        size: `"tiny"`, `"quick"` or `"full"` (see `SIZES`).
        seed: seed of the long-range experiment.
        progress: called with a short message before each section (the CLI prints it).

    Returns:
        A JSON-serializable dict with the sections `analytic`, `measured`, `gradients`,
        `timing`, `long_range`, and `settings`, `environment` (versions, cores, load average
        at the start), `seconds` (time spent per section, and their `total`).

    Example:
    >>> sorted(SIZES)  # run_comparison("tiny") takes about 20 s on 2 cores
    ['full', 'quick', 'tiny']
    >>> SIZES["quick"]["long_range"]["distances"]
    [1, 8]
    """
    check_choice("size", size, COMPARISON_SIZES)
    settings = copy.deepcopy(SIZES[size])
    say = progress or (lambda message: None)
    environment = {
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "gpus": len(tf.config.list_physical_devices("GPU")),
        # 1-minute load average: on a shared machine every section is slower
        "load_average": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }
    results: dict[str, Any] = {"settings": {"size": size, "seed": seed, **settings}}
    results.update(environment=environment, seconds={})
    grad = settings["gradients"]
    spec = dict(settings["long_range"])
    distances, models = spec.pop("distances"), tuple(spec.pop("models"))

    def curves():
        kinds, length, d = GRADIENT_KINDS, grad["length"], grad["d"]
        return {**grad, "curves": gradients.gradient_curves(kinds, length, d, seeds=grad["seeds"])}

    sections = [
        ("analytic", "analytic table", lambda: _analytic(settings)),
        (
            "measured",
            "parameters, FLOPs and sequential steps of traced layers",
            lambda: _measured(settings),
        ),
        ("gradients", "gradient norms against distance", curves),
        ("timing", "forward + backward time against length", lambda: _timing(settings)),
        (
            "long_range",
            "long-range recall: training each model at each distance",
            lambda: long_range.long_range_experiment(distances, models, seed=seed, **spec),
        ),
    ]
    for name, message, fn in sections:
        say(message)
        start = time.perf_counter()
        results[name] = fn()
        results["seconds"][name] = round(time.perf_counter() - start, 2)
    results["seconds"]["total"] = round(sum(results["seconds"].values()), 2)
    return results


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def _slower(other: str, length: int | None) -> str:
    if length is None:
        return f"Attention is never slower than {other} in this range."
    return f"Attention is slower than {other} from T = {length} on."


def _list(parts: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)


def operations_sentence(measured: dict[str, Any]) -> str:
    """What the measured FLOPs and critical paths show, read from the numbers.

    Example:
    >>> layers = {
    ...     "self_attention": {"flops_growth_exponent": 1.6, "critical_path": [4, 4]},
    ...     "rnn": {"flops_growth_exponent": 1.0, "critical_path": [16, 64]},
    ... }
    >>> print(operations_sentence({"lengths": [16, 64], "layers": layers}))
    Over T = 16 to 64 the FLOPs grow with exponent 1.6 for self_attention and 1 for rnn (1: \
linear in T, 2: quadratic). The critical path stays at 4 products for self_attention and \
grows from 16 to 64 for rnn. As Table 1 predicts, self-attention's operations grow faster \
in T than the recurrent layers' while its sequential steps stay constant.
    """
    lengths, layers = measured["lengths"], measured["layers"]
    exponents = [f"{_fmt(v['flops_growth_exponent'], 2)} for {kind}" for kind, v in layers.items()]

    def path_part(kind, path):
        if path[0] != path[-1]:
            return f"grows from {path[0]} to {path[-1]} for {kind}"
        return f"stays at {path[-1]} product{'' if path[-1] == 1 else 's'} for {kind}"

    paths = [path_part(kind, values["critical_path"]) for kind, values in layers.items()]
    text = (
        f"Over T = {lengths[0]} to {lengths[-1]} the FLOPs grow with exponent {_list(exponents)} "
        f"(1: linear in T, 2: quadratic). The critical path {_list(paths)}."
    )
    recurrent = [layers[kind] for kind in ("rnn", "lstm", "gru") if kind in layers]
    if "self_attention" not in layers or not recurrent:
        return text
    attention = layers["self_attention"]
    exponent, path = attention["flops_growth_exponent"], attention["critical_path"]
    faster = all(exponent > values["flops_growth_exponent"] for values in recurrent)
    growing = all(values["critical_path"][-1] > values["critical_path"][0] for values in recurrent)
    if faster and path[0] == path[-1] and growing:
        return text + (
            " As Table 1 predicts, self-attention's operations grow faster in T than the "
            "recurrent layers' while its sequential steps stay constant."
        )
    return text + (
        " Not what Table 1 predicts (self-attention's operations growing faster in T than the "
        "recurrent layers', its sequential steps constant, theirs growing): check the counts above."
    )


def gradient_sentence(grad: dict[str, Any]) -> str:
    """What the gradient-norm curves show, read from the decay ratios.

    Example:
    >>> curves = {
    ...     "rnn": {"norm": [1.0, 0.5, 1e-4], "decay_ratio": 2e-4},
    ...     "transformer": {"norm": [3.0, 0.2, 0.21], "decay_ratio": 1.05},
    ...     "cnn": {"norm": [1.0, 0.3, 0.0], "decay_ratio": 0.0},
    ... }
    >>> print(gradient_sentence({"length": 3, "curves": curves}))
    From distance 1 to distance 2 the gradient norm shrinks by a factor of 5e+03 for rnn, \
stays within a factor of 1.05 for transformer and is exactly zero from distance 2 on \
(beyond the receptive field) for cnn. Relative to its neighbour, the farthest input \
reaches the Transformer's last output 5.2e+03 times as strongly as the RNN's, as the \
O(1) against O(T) path length predicts.
    """
    curves, last = grad["curves"], grad["length"] - 1
    parts = []
    for kind, curve in curves.items():
        ratio, norms = curve["decay_ratio"], curve["norm"]
        if ratio == 0.0:
            zero_from = next(j for j in range(1, last + 1) if not any(norms[j:last]))
            part = f"is exactly zero from distance {zero_from} on (beyond the receptive field)"
        elif ratio < 0.1:
            part = f"shrinks by a factor of {_fmt(1 / ratio, 2)}"
        elif ratio <= 10:
            part = f"stays within a factor of {_fmt(max(ratio, 1 / ratio))}"
        else:
            part = f"grows by a factor of {_fmt(ratio, 2)}"
        parts.append(f"{part} for {kind}")
    text = f"From distance 1 to distance {last} the gradient norm {_list(parts)}."
    if "transformer" not in curves or "rnn" not in curves:
        return text
    transformer, rnn = curves["transformer"]["decay_ratio"], curves["rnn"]["decay_ratio"]
    if rnn > 0 and transformer > 10 * rnn:
        text += (
            " Relative to its neighbour, the farthest input reaches the Transformer's last "
            f"output {_fmt(transformer / rnn, 2)} times as strongly as the RNN's, as"
        )
    elif rnn == 0 and transformer > 0:
        text += (
            " The RNN's gradient from the farthest input vanished completely; the "
            "Transformer's did not, as"
        )
    else:
        text += (
            " The Transformer's farthest gradient is not clearly stronger than the RNN's here, "
            "against what"
        )
    return text + " the O(1) against O(T) path length predicts."


def fit_crossover_phrase(lengths: list[int], at: float | None) -> str:
    """Where the fitted `cT^2` overtakes `bT`, said only within the measured lengths.

    Example:
    >>> fit_crossover_phrase([32, 64, 1024], 20.4)
    'quadratic term is the larger at every length measured (T = 32 to 1024)'
    >>> fit_crossover_phrase([32, 64, 1024], 300.0)
    'quadratic term overtakes the linear one from T = 300'
    """
    span = f"(T = {lengths[0]} to {lengths[-1]})"
    if at is None:
        return f"best fit has no quadratic or no linear term {span}"
    if at < lengths[0]:
        return f"quadratic term is the larger at every length measured {span}"
    if at > lengths[-1]:
        return f"linear term is the larger at every length measured {span}"
    return f"quadratic term overtakes the linear one from T = {at:.0f}"


def timing_sentence(spec: dict[str, Any]) -> str:
    """What the wall-clock table shows, read from the times.

    Example:
    >>> spec = {"lengths": [32, 1024], "kinds": ["self_attention", "lstm"],
    ...         "seconds": {"self_attention": [0.001, 0.02], "lstm": [0.01, 0.5]},
    ...         "time_growth_exponent": {"self_attention": 1.5, "lstm": 1.0}}
    >>> print(timing_sentence(spec))
    The LSTM's step takes 10 times self-attention's at T = 32 and 25 times at T = 1024. \
Over the three longest lengths the time grows with exponent 1.5 for self_attention and 1 \
for lstm. The recurrent layer's T sequential steps cost more than attention's T^2 d \
operations at every length measured.
    """
    lengths, seconds, kinds = spec["lengths"], spec["seconds"], spec["kinds"]
    exponents = [f"{_fmt(spec['time_growth_exponent'][kind], 2)} for {kind}" for kind in kinds]
    text = f"Over the three longest lengths the time grows with exponent {_list(exponents)}."
    if "lstm" not in seconds or "self_attention" not in seconds:
        return text
    lstm, attention = seconds["lstm"], seconds["self_attention"]
    slower = [a > r for a, r in zip(attention, lstm, strict=True)]
    if not any(slower):
        text += (
            " The recurrent layer's T sequential steps cost more than attention's T^2 d "
            "operations at every length measured."
        )
    elif all(slower):
        text += " Attention is slower than the LSTM at every length measured."
    else:
        at = ", ".join(str(t) for t, s in zip(lengths, slower, strict=True) if s)
        text += f" Attention is slower than the LSTM at T = {at} and faster elsewhere."
    return (
        f"The LSTM's step takes {_fmt(lstm[0] / attention[0], 2)} times self-attention's at "
        f"T = {lengths[0]} and {_fmt(lstm[-1] / attention[-1], 2)} times at T = {lengths[-1]}. "
        + text
    )


def long_range_sentence(lr: dict[str, Any]) -> str:
    """What the recall accuracies show, per model, read from the numbers.

    An accuracy is "high" from 0.9 and "near chance" within 0.1 of chance; a change of more
    than 0.1 is a rise or a fall. The Transformer is "ahead" when it beats every other model
    at the longest distance by at least 0.2.

    Example:
    >>> lr = {"distances": [2, 8], "chance": 0.1,
    ...       "accuracy": {"transformer": [1.0, 0.98], "rnn": [0.96, 0.15], "cnn": [0.1, 0.2]}}
    >>> print(long_range_sentence(lr))
    From distance 2 to 8 the accuracy of transformer goes from 1 to 0.98 (stays high), of \
rnn from 0.96 to 0.15 (falls to near chance) and of cnn from 0.1 to 0.2 (near chance at \
both: not learned even at distance 2). At distance 8 the Transformer is ahead of every \
other model by at least 0.78, as its O(1) path predicts.
    """
    distances, accuracy, near_chance = lr["distances"], lr["accuracy"], lr["chance"] + 0.1
    first, last = distances[0], distances[-1]
    parts = []
    for i, (name, values) in enumerate(accuracy.items()):
        start, end = values[0], values[-1]
        if end >= 0.9:
            verdict = "stays high" if start >= 0.9 else "rises to high"
        elif start <= near_chance and end <= near_chance:
            verdict = f"near chance at both: not learned even at distance {first}"
        elif end <= near_chance:
            verdict = "falls to near chance"
        elif end < start - 0.1:
            verdict = f"falls by {_fmt(start - end, 2)}"
        elif end > start + 0.1:
            verdict = f"rises by {_fmt(end - start, 2)}"
        else:
            verdict = "about the same"
        of = f"of {name}" if i else f"the accuracy of {name} goes"
        parts.append(f"{of} from {_fmt(start, 2)} to {_fmt(end, 2)} ({verdict})")
    text = f"From distance {first} to {last} {_list(parts)}."
    others = [values[-1] for name, values in accuracy.items() if name != "transformer"]
    if "transformer" not in accuracy or not others:
        return text
    margin = accuracy["transformer"][-1] - max(others)
    if margin >= 0.2:
        return text + (
            f" At distance {last} the Transformer is ahead of every other model by at least "
            f"{_fmt(margin, 2)}, as its O(1) path predicts."
        )
    return text + (
        f" At distance {last} the Transformer is not clearly ahead (by {_fmt(margin, 2)}): "
        "against what its O(1) path predicts, so it was probably trained too briefly here "
        "(more pairs or epochs)."
    )


def comparison_markdown(results: dict[str, Any]) -> str:
    """The Markdown report of `run_comparison`'s results: a table and a sentence per section."""
    analytic, measured, env = results["analytic"], results["measured"], results["environment"]
    d, k, length = analytic["d"], analytic["kernel_size"], analytic["length"]
    layers, crossover, table = measured["layers"], analytic["crossover"], analytic["table"]
    fields = ("parameters", "parameters_equal_formula", "flops", "flops_equal_formula")
    fields += ("critical_path", "sequential_steps")
    header = "layer|T|parameters|= formula|FLOPs|= formula|critical path|sequential steps"

    # each column, with the key of its big-O order ("" for none)
    columns = ("parameters", "parameters"), ("flops", ""), ("table_operations", "operations")
    columns += ("sequential_steps", "sequential"), ("maximum_path_length", "path")
    rows = [
        [r["layer"], *(f"{r[k]} ({r[o + '_order']})" if o else r[k] for k, o in columns)]
        for r in table
    ]
    counted = [
        [kind, t, *(v[i] if isinstance(v, list) else v for v in (layers[kind][f] for f in fields))]
        for kind in OPERATION_KINDS
        for i, t in enumerate(measured["lengths"])
    ]
    loop = measured["recurrent_loop"]
    out = [
        "# Transformers versus RNNs, measured",
        f"Size `{results['settings']['size']}`; TensorFlow {env['tensorflow']}, "
        f"Keras {env['keras']}, {env['cpu_count']} CPU cores, {env['gpus']} GPU.",
        f"## 1. Table 1 of the paper at T = {length}, d = {d}, k = {k}",
        "The big-O columns of the course and the exact counts for the Keras layer of each row "
        "(FLOPs: 2 per multiply-add of the matrix products, batch 1). Parameters do not depend "
        "on T for any layer; only the recurrent layer needs T sequential steps.",
        _table("layer|parameters|FLOPs|Table 1 operations|sequential|max path".split("|"), rows),
        f"With Table 1's leading terms attention does fewer operations than an RNN while "
        f"T < d = {_fmt(crossover['table_terms'])}; counting its Q, K, V, output projections "
        f"too, it is cheaper than an LSTM while T < {_fmt(crossover['exact_vs_lstm'])} and "
        "never cheaper than a simple RNN.",
        "## 2. Measured on built and traced Keras layers",
        "Parameters from `count_params()`; FLOPs counted from the shapes of the "
        "`MatMul`/`BatchMatMulV2`/`Conv2D` ops of the traced `tf.function` graph (recurrent "
        "layers unrolled). The critical path is the most matrix products on one dependency "
        "chain of the graph; sequential steps are the critical path at T over the critical "
        "path at T = 1. The growth exponent is the slope of log FLOPs against log T.",
        _table(header.split("|"), counted),
        _table(
            ["layer", "FLOPs growth exponent in T"],
            [[kind, _fmt(layers[kind]["flops_growth_exponent"])] for kind in OPERATION_KINDS],
        ),
        operations_sentence(measured),
        "Iterations of a Keras LSTM's `tf.while_loop`, counted by a cell that increments a "
        "variable at every step:",
        _table(["T", "loop iterations"], list(zip(loop["lengths"], loop["steps"], strict=True))),
    ]
    grad, last = results["gradients"], results["gradients"]["length"] - 1
    picks, curves = (1, last // 4, last), grad["curves"].items()
    out += [
        "## 3. Path length through gradients (T = {length}, d = {d}, {seeds} seeds)".format(**grad),
        "Mean norm of the gradient of the last output with respect to the input `T - t` "
        "positions back, for freshly initialized layers. The course predicts that the recurrent "
        "gradients shrink geometrically with the distance, the Transformer's stay flat, and the "
        "CNN's are exactly zero beyond its receptive field.",
        _table(
            ["model", *(f"distance {i}" for i in picks), "ratio last / 1"],
            [[k, *(_fmt(c["norm"][i]) for i in picks), _fmt(c["decay_ratio"])] for k, c in curves],
        ),
        gradient_sentence(grad),
    ]
    spec, kinds = results["timing"], results["timing"]["kinds"]
    timing_rows = [
        [t] + [_fmt(spec["seconds"][kind][i]) for kind in kinds]
        for i, t in enumerate(spec["lengths"])
    ]
    exponents = [_fmt(spec["time_growth_exponent"][kind], 2) for kind in kinds]
    timing_rows.append(["growth exponent (3 longest)", *exponents])
    fit = spec["self_attention_fit"]["quadratic_overtakes_linear_at"]
    out += [
        f"## 4. Wall clock of one forward + backward step (d = {spec['d']}, batch "
        f"{spec['batch']}, median of {spec['repeats']}, {spec['device']}, "
        f"{spec['cpu_count']} cores)",
        "Seconds per step. The course predicts that the recurrent layer pays for its T "
        "sequential steps even when each does little work, and attention for its T^2 d "
        "operations only once they dominate.",
        _table(["T", *kinds], timing_rows),
        timing_sentence(spec),
        "Fitting attention's time as a + bT + cT^2 (relative error, non-negative terms), the "
        + fit_crossover_phrase(spec["lengths"], fit)
        + f" (by operation count at T = 2d = {spec['analytic_quadratic_overtakes_linear_at']}). "
        + _slower("the LSTM", spec["self_attention_slower_than_lstm_from"])
        + " "
        + _slower("the convolution", spec["self_attention_slower_than_convolution_from"]),
    ]
    lr = results["long_range"]
    options, accuracy, distances = lr["settings"], lr["accuracy"], lr["distances"]
    rows = [[n, *(_fmt(accuracy[m][i], 2) for m in accuracy)] for i, n in enumerate(distances)]
    out += [
        "## 5. Long-range recall",
        "Accuracy of the recalled symbol `distance` positions from the end of a source of "
        f"varying length, each model trained briefly from scratch ({options.get('num_train')} "
        f"pairs, {options.get('epochs')} epochs, d = {options.get('d_model')}, "
        f"{options.get('num_layers', 2)} layer(s) per stack for the Transformer and the CNN, "
        f"{options.get('num_heads', 1)} attention head(s)); chance is {_fmt(lr['chance'])}. "
        "The course predicts that accuracy falls with distance where the path between the "
        "answer and the output grows: the RNN's with every step it must carry the symbol, the "
        "CNN's once the distance passes its receptive field (num_layers * (k - 1)), the "
        "Transformer's not at all.",
        _table(["distance", *accuracy], rows),
        long_range_sentence(lr),
        "## Time spent",
        _table(["section", "seconds"], [[k, v] for k, v in results["seconds"].items()]),
        f"Load average at the start: {_fmt(env.get('load_average'), 2)} "
        f"on {env['cpu_count']} cores (other work on the machine slows every section).",
        "Figures: " + ", ".join(f"`plots/{name}`" for name in PLOTS) + ".",
    ]
    return "\n\n".join(out) + "\n"


def write_comparison(results: dict[str, Any], out_dir: str | os.PathLike) -> dict[str, str]:
    """Writes `comparison.json`, `comparison.md` and `plots/*.png`; returns their paths by key."""
    out_dir = str(out_dir)
    plots_dir = os.path.join(out_dir, "plots")
    os.makedirs(plots_dir, exist_ok=True)
    names = {"json": "comparison.json", "markdown": "comparison.md"}
    paths = {key: os.path.join(out_dir, name) for key, name in names.items()}
    with open(paths["json"], "w") as handle:
        json.dump(results, handle, indent=2)
    with open(paths["markdown"], "w") as handle:
        handle.write(comparison_markdown(results))
    for name, plot in PLOTS.items():
        paths[name] = plot(results, os.path.join(plots_dir, name))
    return paths
