"""Training and decoding throughput, measured so that ratios survive a noisy machine.

Behind `keras-transformer benchmark` and the scripts of the clone's `benchmarks/`. All variants
are built in one process and timed round-robin, so load from other programs slows all alike;
ratios are medians of per-repeat ratios; MFU is step FLOPs / step time / the peak of a float32
matmul timed in the same rounds.

FLOPs of one training step (`transformer_step_flops`), on the padded shapes: a `(m, k) @ (k, n)`
product costs `2 m k n`. With `a = num_heads * key_dim` (`d` in the paper, `num_heads * d` in the
TensorFlow tutorial, whose heads are `d` wide):
- per encoder layer and source token: `8 d a` (Q, K, V, O) `+ 4 S a` (scores and weighted sum
  over `S` source positions) `+ 4 d dff` (feed-forward);
- per decoder layer and target token: `8 d a + 4 T a` (causal self-attention, in full, as
  computed) `+ 4 d a + 4 S a` (cross-attention) `+ 4 d dff`, and `4 d a` per source token (K, V);
- the output projection: `2 d V` per target token.
Elementwise work (embeddings, softmax, layer norm, dropout, optimizer update) is left out; the
backward pass costs twice the forward, so a step is `3x` the forward FLOPs. Peers share inputs,
embeddings, output projection and dropout; only the blocks differ: `ours` (`build_transformer`),
`keras_mha` (post-LN Keras `MultiHeadAttention`), `keras_hub` (KerasHub's blocks), `tutorial`
(`keras_mha` with heads `d_model` wide).
"""

import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_transformer import training as training_module
from keras_transformer._validation import check_choice
from keras_transformer.choices import BENCHMARK_MODELS, BENCHMARK_SIZES, PRECISION_NAMES
from keras_transformer.errors import UserInputError
from keras_transformer.layers import PaddingMask, PositionalEmbedding
from keras_transformer.models import build_transformer

BLOCK_SIZES = ("num_layers", "d_model", "num_heads", "dff")


def machine_info() -> dict[str, Any]:
    """CPU model, cores, GPUs, load and library versions of this machine.

    Example:
    >>> sorted(machine_info())[:3]
    ['cores', 'cpu', 'gpus']
    """
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as handle:
        models = (line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
        cpu = next(models, cpu)
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = None
    with contextlib.suppress(OSError):
        load = [round(x, 2) for x in os.getloadavg()]
    gpus = [
        tf.config.experimental.get_device_details(gpu).get("device_name", gpu.name)
        for gpu in tf.config.list_physical_devices("GPU")
    ]
    return {
        "cpu": cpu,
        "cores": usable,
        "gpus": gpus,
        "load_average_1_5_15_min": load,
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
    }


def describe_machine(info: dict[str, Any]) -> str:
    """One line for the top of a report."""
    gpus = ", ".join(info["gpus"]) or "no GPU"
    return (
        f"{info['cpu']}, {info['cores']} cores, {gpus}; load average "
        f"{info['load_average_1_5_15_min']} at start (other jobs share this machine); "
        f"TensorFlow {info['tensorflow']}, Keras {info['keras']}, Python {info['python']}"
    )


def matmul_step(n: int = 1024, dtype: str = "float32") -> tuple[Callable[[], Any], float]:
    """A compiled `(n, n) @ (n, n)` product and its FLOPs, `2 n^3`: the peak MFU divides by."""
    a, b = (tf.random.normal((n, n), dtype=dtype) for _ in range(2))
    product = tf.function(lambda: tf.reduce_sum(tf.linalg.matmul(a, b)))

    def run():
        return product().numpy()

    run()
    return run, 2.0 * n**3


def transformer_step_flops(
    *,
    num_layers: int,
    d_model: int,
    num_heads: int,
    dff: int,
    target_vocab_size: int,
    batch: int,
    source_length: int,
    target_length: int,
    key_dim: int | None = None,
) -> float:
    """FLOPs of one training step (forward + backward) of the encoder-decoder.

    The formula is in this module's docstring; `key_dim` defaults to `d_model // num_heads`
    (the paper); the TensorFlow tutorial's heads have `key_dim = d_model`.

    Example:
    >>> flops = transformer_step_flops(num_layers=4, d_model=128, num_heads=8, dff=512,
    ...     target_vocab_size=8000, batch=64, source_length=128, target_length=128)
    >>> round(flops / 1e9, 1)
    159.9
    """
    d, s, t = d_model, source_length, target_length
    a = num_heads * (key_dim if key_dim is not None else d_model // num_heads)
    encoder = batch * s * (8 * d * a + 4 * s * a + 4 * d * dff)
    decoder = batch * t * (8 * d * a + 4 * t * a + 4 * d * a + 4 * s * a + 4 * d * dff)
    decoder += batch * s * 4 * d * a
    forward = num_layers * (encoder + decoder) + batch * t * 2 * d * target_vocab_size
    return 3.0 * forward


def model_key_dim(model: str, d_model: int, num_heads: int) -> int:
    """Head size of a benchmarked model: `d_model` for the tutorial's, else `d_model / heads`."""
    return d_model if model == "tutorial" else d_model // num_heads


class _AttentionMask(keras.layers.Layer):
    """(batch, kv_len) bool -> (batch, 1, kv_len) for keras MHA's attention_mask."""

    def call(self, mask):
        return keras.ops.expand_dims(mask, 1)


def _embed(ids, vocab, d_model, max_length, dropout, name):
    mask = PaddingMask(name=f"{name}_padding_mask")(ids)  # (batch, seq_len)
    x = PositionalEmbedding(vocab, d_model, max_length=max_length, mask_zero=False, name=name)(ids)
    return mask, keras.layers.Dropout(dropout)(x)


def _residual(x, y, dropout):
    y = keras.layers.Dropout(dropout)(y)
    return keras.layers.LayerNormalization(epsilon=1e-6)(keras.layers.Add()([x, y]))


def _feed_forward(x, d_model, dff, dropout):
    y = keras.layers.Dense(dff, activation="relu")(x)
    return _residual(x, keras.layers.Dense(d_model)(y), dropout)


def _peer_model(
    name, encode, decode, vocabs, *, num_layers=4, d_model=128, max_length=512, dropout=0.1
):
    """Inputs, embeddings and logits of a peer; `encode` and `decode` make its blocks."""
    source, target = (keras.Input((None,), dtype="int32", name=n) for n in ("source", "target"))
    src_mask, x = _embed(source, vocabs[0], d_model, max_length, dropout, "encoder_embedding")
    for _ in range(num_layers):
        x = encode(x, src_mask)
    tgt_mask, h = _embed(target, vocabs[1], d_model, max_length, dropout, "decoder_embedding")
    for _ in range(num_layers):
        h = decode(h, x, tgt_mask, src_mask)
    logits = keras.layers.Dense(vocabs[1], dtype="float32", name="logits")(h)
    return keras.Model({"source": source, "target": target}, logits, name=name)


def build_keras_mha_transformer(
    source_vocab_size: int,
    target_vocab_size: int,
    *,
    num_heads: int = 8,
    key_dim: int | None = None,
    dff: int = 512,
    dropout: float = 0.1,
    attention_dropout: float = 0.0,
    d_model: int = 128,
    num_layers: int = 4,
    max_length: int = 512,
) -> keras.Model:
    """`build_transformer`'s model with blocks made of `keras.layers.MultiHeadAttention`."""
    key_dim = key_dim or d_model // num_heads

    def attention(query, value, mask, **options):
        mask = _AttentionMask()(mask)  # (batch, 1, kv_len)
        layer = keras.layers.MultiHeadAttention(num_heads, key_dim, dropout=attention_dropout)
        return _residual(query, layer(query, value, attention_mask=mask, **options), dropout)

    def encode(x, src_mask):
        return _feed_forward(attention(x, x, src_mask), d_model, dff, dropout)

    def decode(h, x, tgt_mask, src_mask):
        h = attention(h, h, tgt_mask, use_causal_mask=True)
        return _feed_forward(attention(h, x, src_mask), d_model, dff, dropout)

    vocabs = (source_vocab_size, target_vocab_size)
    sizes = dict(num_layers=num_layers, d_model=d_model, max_length=max_length, dropout=dropout)
    return _peer_model("keras_mha", encode, decode, vocabs, **sizes)


def build_tutorial_transformer(
    source_vocab_size: int, target_vocab_size: int, *, d_model: int = 128, **kwargs
) -> keras.Model:
    """The `keras_mha` model with the TensorFlow tutorial's head size, `key_dim = d_model`."""
    model = build_keras_mha_transformer(
        source_vocab_size, target_vocab_size, d_model=d_model, key_dim=d_model, **kwargs
    )
    model.name = "tutorial"
    return model


def keras_hub_available() -> bool:
    """Whether KerasHub can be imported (the `keras_hub` peer needs it)."""
    try:
        import keras_hub  # noqa: F401
    except ImportError:
        return False
    return True


def build_keras_hub_transformer(
    source_vocab_size: int,
    target_vocab_size: int,
    *,
    num_heads: int = 8,
    dff: int = 512,
    dropout: float = 0.1,
    attention_dropout: float = 0.0,
    **sizes: int,
) -> keras.Model:
    """The same model from KerasHub's encoder and decoder blocks (`attention_dropout` ignored).

    `sizes`: `num_layers`, `d_model` and `max_length`, as in `build_keras_mha_transformer`.
    """
    try:
        import keras_hub
    except ImportError as error:
        raise ImportError(
            "the keras_hub peer needs KerasHub: pip install keras-hub "
            '(or pip install -e ".[bench]")'
        ) from error
    hub = keras_hub.layers

    def encode(x, src_mask):
        return hub.TransformerEncoder(dff, num_heads, dropout=dropout)(x, padding_mask=src_mask)

    def decode(h, x, tgt_mask, src_mask):
        layer = hub.TransformerDecoder(dff, num_heads, dropout=dropout)
        return layer(h, x, decoder_padding_mask=tgt_mask, encoder_padding_mask=src_mask)

    vocabs = (source_vocab_size, target_vocab_size)
    return _peer_model("keras_hub", encode, decode, vocabs, dropout=dropout, **sizes)


BUILDERS: dict[str, Callable[..., keras.Model]] = {
    "ours": build_transformer,
    "keras_mha": build_keras_mha_transformer,
    "keras_hub": build_keras_hub_transformer,
    "tutorial": build_tutorial_transformer,
}


def synthetic_batch(
    batch: int, length: int, vocab: int, *, seed: int = 0
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """One fixed-shape batch: ids in `[4, vocab)`, real lengths uniform in `[length // 2, length]`.

    Labels are the targets shifted by one, 0 (ignored) on padding.

    Example:
    >>> inputs, labels = synthetic_batch(2, 8, 50)
    >>> inputs["source"].shape, labels.shape
    ((2, 8), (2, 8))
    """
    rng = np.random.default_rng(seed)
    ids = {}
    for key in ("source", "target"):
        x = rng.integers(4, vocab, size=(batch, length)).astype("int32")
        lengths = rng.integers(length // 2, length + 1, size=batch)
        x[np.arange(length)[None] >= lengths[:, None]] = 0
        ids[key] = x
    labels = np.roll(ids["target"], -1, axis=1)
    labels[:, -1] = 0
    labels[ids["target"] == 0] = 0
    return ids, labels


def _tensors(size: dict[str, int]) -> tuple[dict[str, tf.Tensor], tf.Tensor]:
    inputs, labels = synthetic_batch(size["batch"], size["length"], size["vocab"])
    return {k: tf.constant(v) for k, v in inputs.items()}, tf.constant(labels)


def build_benchmarked(
    model: str,
    size: dict[str, int],
    *,
    jit_compile: bool = False,
    precision: str = "float32",
    dropout: float = 0.1,
    attention_dropout: float = 0.0,
) -> keras.Model:
    """Builds and compiles one benchmarked model under the dtype policy `precision`."""
    check_choice("model", model, BENCHMARK_MODELS)
    check_choice("precision", precision, tuple(PRECISION_NAMES))
    previous = keras.mixed_precision.global_policy().name
    keras.mixed_precision.set_global_policy(precision)
    try:
        kwargs = {k: size[k] for k in BLOCK_SIZES} | {"max_length": max(256, size["length"])}
        kwargs.update(dropout=dropout, attention_dropout=attention_dropout)
        built = BUILDERS[model](size["vocab"], size["vocab"], **kwargs)
        loss = training_module.MaskedSparseCategoricalCrossentropy()
        metrics = [training_module.MaskedAccuracy()]
        optimizer = training_module.make_optimizer(size["d_model"], 4000)
        built.compile(optimizer=optimizer, loss=loss, metrics=metrics, jit_compile=jit_compile)
    finally:
        keras.mixed_precision.set_global_policy(previous)
    return built


def variant_name(model: str, jit_compile: bool, precision: str) -> str:
    """`"ours xla bf16"` style label."""
    short = PRECISION_NAMES[precision]
    return f"{model} {'xla' if jit_compile else 'no-xla'} {short}"


def round_robin(
    functions: dict[str, Callable[[], Any]],
    *,
    repeats: int,
    steps: int | dict[str, int],
    progress: Callable[[str], None] | None = None,
) -> dict[str, list[float]]:
    """Seconds per call of each function, one sample per repeat, measured round-robin.

    Each repeat calls every function `steps` times in turn (the order rotates from repeat to
    repeat), so load from other programs is shared out evenly.

    Example:
    >>> samples = round_robin({"a": lambda: sum(range(100))}, repeats=2, steps=3)
    >>> len(samples["a"]), samples["a"][0] > 0
    (2, True)
    """
    names = list(functions)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(repeats):
        for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
            count = steps[name] if isinstance(steps, dict) else steps
            start = time.perf_counter()
            for _ in range(count):
                functions[name]()
            samples[name].append((time.perf_counter() - start) / count)
        if progress:
            progress(f"repeat {repeat + 1}/{repeats} done")
    return samples


def paired_ratio(numerator: Sequence[float], denominator: Sequence[float]) -> float:
    """Median over repeats of `numerator[r] / denominator[r]`.

    Example:
    >>> paired_ratio([2.0, 4.0, 3.0], [1.0, 2.0, 1.0])
    2.0
    """
    return statistics.median(a / b for a, b in zip(numerator, denominator, strict=True))


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _memory_probe(spec: dict) -> dict:
    """Runs in a fresh process: builds one variant, trains `steps` steps, reports memory."""
    size = spec["size"]
    inputs, labels = _tensors(size)
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        tf.config.experimental.reset_memory_stats("GPU:0")
    baseline = _status_mb("VmRSS")
    options = {key: spec[key] for key in ("jit_compile", "precision")}
    options["attention_dropout"] = spec.get("attention_dropout", 0.0)
    model = build_benchmarked(spec["model"], size, **options)
    for _ in range(spec.get("steps", 2)):
        model.train_on_batch(inputs, labels)
    peak = round(_status_mb("VmHWM"), 1)
    result = {"baseline_rss_mb": round(baseline, 1), "peak_rss_mb": peak}
    result["peak_increase_mb"] = round(peak - baseline, 1)
    if gpus:
        info = tf.config.experimental.get_memory_info("GPU:0")
        result["gpu_peak_mb"] = round(info["peak"] / 2**20, 1)
    return result


def measure_memory(
    model: str,
    size: dict[str, int],
    *,
    jit_compile: bool = False,
    precision: str = "float32",
    attention_dropout: float = 0.0,
    steps: int = 2,
    timeout: float = 900,
) -> dict:
    """Peak memory of building and training one variant, in a fresh process.

    `baseline_rss_mb` (after importing TensorFlow), `peak_rss_mb` (`VmHWM`), their
    difference `peak_increase_mb`, and on a GPU `gpu_peak_mb`.
    """
    spec = dict(model=model, size=dict(size), jit_compile=jit_compile, precision=precision)
    spec.update(attention_dropout=attention_dropout, steps=steps)
    code = (
        "import json, sys; from keras_transformer.analysis.throughput import _memory_probe; "
        "print('RESULT ' + json.dumps(_memory_probe(json.loads(sys.argv[1]))))"
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    command = [sys.executable, "-c", code, json.dumps(spec)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    for line in completed.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(
        f"memory probe of {model} failed (exit {completed.returncode}): "
        + completed.stderr.strip()[-2000:]
    )


def benchmark_training(
    size: str | dict[str, int] = "tutorial",
    variants: Sequence[tuple[str, bool, str]] = (("ours", False, "float32"),),
    *,
    steps: int = 2,
    repeats: int = 3,
    memory: bool = False,
    attention_dropout: float = 0.0,
    matmul_size: int = 1024,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Step time, non-padding tokens/s, MFU and ratios of `(model, xla, precision)` variants.

    All variants train on one fixed batch, round-robin with a float32 matmul (the peak under the
    same load), after two warm-up steps. `size` is a key of `BENCHMARK_SIZES` or a dict like one; `memory`
    adds `measure_memory` per variant. Rows hold `step_ms`, `tokens_per_s`, `mfu`,
    `speed_vs_reference` (over the first variant) and, for peers, `ours_speedup` (peer time /
    ours; above 1: ours is faster).
    """
    say = progress or (lambda message: None)
    cfg = dict(BENCHMARK_SIZES[size]) if isinstance(size, str) else dict(size)
    variants = [tuple(v) for v in variants]
    if not variants:
        raise UserInputError("variants is empty; pass at least one (model, jit_compile, precision)")
    if len(set(variants)) != len(variants):
        raise UserInputError(f"variants={variants!r} has duplicates")
    if "keras_hub" in {v[0] for v in variants} and not keras_hub_available():
        raise ImportError("the keras_hub peer needs KerasHub: pip install keras-hub")
    inputs, labels = _tensors(cfg)
    tokens = int(np.count_nonzero(labels))
    models, functions = {}, {}
    for model_name, jit, precision in variants:
        label = variant_name(model_name, jit, precision)
        say(f"building and compiling {label}")
        model = build_benchmarked(
            model_name,
            cfg,
            jit_compile=jit,
            precision=precision,
            attention_dropout=attention_dropout,
        )
        for _ in range(2):  # trace, compile, warm up
            model.train_on_batch(inputs, labels)
        models[label] = model
        functions[label] = lambda m=model: m.train_on_batch(inputs, labels)
    functions["matmul"], matmul_flops = matmul_step(matmul_size)
    say("timing round-robin")
    counts = {**{label: steps for label in models}, "matmul": 3}
    samples = round_robin(functions, repeats=repeats, steps=counts, progress=say)
    peak_samples = [matmul_flops / s for s in samples.pop("matmul")]
    reference = variant_name(*variants[0])
    rows = []
    for (model_name, jit, precision), label in zip(variants, models, strict=True):
        step = statistics.median(samples[label])
        flops = transformer_step_flops(
            **{k: cfg[k] for k in (*BLOCK_SIZES, "batch")},
            target_vocab_size=cfg["vocab"],
            source_length=cfg["length"],
            target_length=cfg["length"],
            key_dim=model_key_dim(model_name, cfg["d_model"], cfg["num_heads"]),
        )
        pairs = zip(samples[label], peak_samples, strict=True)
        mfu = statistics.median(flops / s / p for s, p in pairs)
        row = {
            "variant": label,
            "model": model_name,
            "xla": jit,
            "precision": precision,
            "parameters": models[label].count_params(),
            "step_gflop": round(flops / 1e9, 2),
            "step_ms": round(1000 * step, 2),
            "step_ms_min": round(1000 * min(samples[label]), 2),
            "tokens_per_s": round(tokens / step, 1),
            "mfu": round(mfu, 4),
            "speed_vs_reference": round(paired_ratio(samples[reference], samples[label]), 3),
        }
        ours = variant_name("ours", jit, precision)
        if model_name != "ours" and ours in samples:
            row["ours_speedup"] = round(paired_ratio(samples[label], samples[ours]), 3)
        rows.append(row)
    for row in rows if memory else ():
        say(f"memory of {row['variant']} (fresh process)")
        options = dict(precision=row["precision"], attention_dropout=attention_dropout)
        row.update(measure_memory(row["model"], cfg, jit_compile=row["xla"], **options))
    return {
        "machine": machine_info(),
        "size": cfg,
        "attention_dropout": attention_dropout,
        "repeats": repeats,
        "steps": steps,
        "reference": reference,
        "tokens_per_step": tokens,
        "matmul_peak_gflops": round(statistics.median(peak_samples) / 1e9, 2),
        "rows": rows,
    }


def format_training_table(result: dict[str, Any]) -> str:
    """The rows of `benchmark_training` as a Markdown table."""
    memory = any("peak_increase_mb" in row for row in result["rows"])
    head = f"| variant | step ms | non-pad tokens/s | MFU | speed vs {result['reference']} |"
    head += " peer time / ours |" + (" peak memory MB |" if memory else "")
    rule = "| --- | ---: | ---: | ---: | ---: | ---: |" + (" ---: |" if memory else "")
    lines = [head, rule]
    for row in result["rows"]:
        ratio = f"{row['ours_speedup']:.2f}" if "ours_speedup" in row else "-"
        line = (
            f"| {row['variant']} | {row['step_ms']:.0f} | {row['tokens_per_s']:.0f} | "
            f"{100 * row['mfu']:.1f}% | {row['speed_vs_reference']:.2f}x | {ratio} |"
        )
        if memory:
            line += f" {row.get('peak_increase_mb', float('nan')):.0f} |"
        lines.append(line)
    return "\n".join(lines)


def benchmark_decoding(
    model: keras.Model,
    *,
    new_tokens: int = 32,
    batch: int = 8,
    source_length: int = 16,
    repeats: int = 3,
    jit_compile: bool = False,
    vocab: int | None = None,
) -> dict[str, Any]:
    """Greedy decoding of exactly `new_tokens` tokens with and without the key/value cache.

    Both are traced first and timed round-robin (`[END]` is -1, so no row stops early).
    """
    from keras_transformer.inference import IncrementalDecoder, greedy_search

    vocab = vocab or model.get_layer("encoder_embedding").vocab_size
    rng = np.random.default_rng(0)
    source = rng.integers(4, vocab, size=(batch, source_length)).astype("int32")
    source[:, 0], source[:, -1] = 2, 3
    source, expected, functions = tf.constant(source), (batch, new_tokens), {}
    for use_cache in (True, False):
        # XLA cannot compile the uncached path's growing prefix: use the full buffer.
        options = {"static_shapes": True} if jit_compile and not use_cache else {}
        decoder = IncrementalDecoder(model, new_tokens + 1, use_cache=use_cache, **options)
        search = tf.function(
            lambda s, d=decoder: greedy_search(d, s, start_id=2, end_id=-1),
            jit_compile=jit_compile or None,
        )
        out = search(source).numpy()  # trace and warm up
        if out.shape != expected:
            raise RuntimeError(f"greedy search returned {out.shape}, expected {expected}")
        functions["cached" if use_cache else "uncached"] = lambda f=search: f(source).numpy()
    samples = round_robin(functions, repeats=repeats, steps=1)
    generated = batch * new_tokens
    return {
        "new_tokens": new_tokens,
        "batch": batch,
        "xla": jit_compile,
        "cached_tokens_per_s": round(generated / statistics.median(samples["cached"]), 1),
        "uncached_tokens_per_s": round(generated / statistics.median(samples["uncached"]), 1),
        "cache_speedup": round(paired_ratio(samples["uncached"], samples["cached"]), 3),
    }
