"""Training throughput: our layers against peers, XLA, mixed precision, memory, MFU, data pipeline.

Everything is measured in one process, round-robin (each repeat times a chunk
of steps of every variant in turn), and reported as ratios, so that the
comparison survives a noisy machine. Throughput counts non-padding target
tokens per second. The measurement code (FLOP formula, peers, memory probe)
is `keras_transformer.analysis.throughput`; its docstring documents the formula.

    python benchmarks/training.py models    [--size tutorial|base|tiny] [--xla] [--memory]
    python benchmarks/training.py settings  [--size ...] [--memory]   # XLA x precision
    python benchmarks/training.py attention [--repeats 5]             # one layer, fwd+bwd
    python benchmarks/training.py pipeline  [--num-train 2048] [--repeats 3]
    python benchmarks/training.py models --variants ours:xla:bf16 keras_mha:no-xla:fp32

`models` compares the peers at float32 without XLA (`--xla`: with XLA too);
`settings` runs our model with XLA off/on and float32/bfloat16. Both train on
one fixed synthetic batch (lengths uniform in [length/2, length]). `--memory`
adds each variant's peak memory, measured in a fresh process per variant.
`--json FILE` writes everything measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_transformer.analysis import throughput as benchmarking  # noqa: E402
from keras_transformer.choices import BENCHMARK_MODELS, BENCHMARK_SIZES  # noqa: E402
from keras_transformer.data import WordPieceTokenizer, load_task, make_dataset  # noqa: E402
from keras_transformer.training import (  # noqa: E402
    MaskedSparseCategoricalCrossentropy,
    make_optimizer,
)
from keras_transformer.training.config import TrainConfig  # noqa: E402
from keras_transformer.training.devices import resolve_precision, use_xla  # noqa: E402

PRECISION_NAMES = {"fp32": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
START = time.perf_counter()


def say(message: str) -> None:
    print(f"[{time.perf_counter() - START:6.0f}s] {message}", file=sys.stderr, flush=True)


def parse_variant(text: str) -> tuple[str, bool, str]:
    """`ours:xla:bf16` -> ("ours", True, "mixed_bfloat16")."""
    parts = text.split(":")
    if (
        len(parts) != 3
        or parts[0] not in BENCHMARK_MODELS
        or parts[1] not in ("xla", "no-xla")
        or parts[2] not in PRECISION_NAMES
    ):
        raise argparse.ArgumentTypeError(
            f"variant {text!r} must be MODEL:xla|no-xla:fp32|bf16|fp16 with MODEL one of "
            f"{', '.join(BENCHMARK_MODELS)}"
        )
    return parts[0], parts[1] == "xla", PRECISION_NAMES[parts[2]]


def without_missing_peers(variants):
    """Drops the KerasHub peer, with a note, when KerasHub is not installed."""
    if benchmarking.keras_hub_available():
        return list(variants)
    if any(v[0] == "keras_hub" for v in variants):
        print(
            "note: KerasHub is not installed, so the keras_hub peer is skipped "
            '(pip install keras-hub, or pip install -e ".[bench]")'
        )
    return [v for v in variants if v[0] != "keras_hub"]


def run_training(args, variants) -> dict:
    variants = without_missing_peers(variants)
    result = benchmarking.benchmark_training(
        args.size,
        variants,
        steps=args.steps or 1,
        repeats=args.repeats,
        memory=args.memory,
        attention_dropout=args.attention_dropout,
        progress=say,
    )
    size = result["size"]
    print(
        f"\n{args.size} size: {size['num_layers']} layers, d_model {size['d_model']}, "
        f"{size['num_heads']} heads, dff {size['dff']}, vocabulary {size['vocab']}, "
        f"batch {size['batch']} x length {size['length']} "
        f"({result['tokens_per_step']} non-padding target tokens), "
        f"attention dropout {result['attention_dropout']}; "
        f"{result['repeats']} repeats x {result['steps']} steps, medians; "
        f"float32 matmul peak {result['matmul_peak_gflops']} GFLOP/s (measured alongside)"
    )
    print(benchmarking.format_training_table(result))
    flops = {row["model"]: row["step_gflop"] for row in result["rows"]}
    print("step GFLOP (formula): " + ", ".join(f"{m} {g}" for m, g in flops.items()))
    return result


# --------------------------------------------------------------------------- attention layer


def bench_attention(args) -> dict:
    """One masked causal self-attention layer, forward + backward, ours against Keras's."""
    from keras_transformer.layers import MultiHeadAttention

    batch, length, d_model, heads = 64, 128, 128, 8
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(batch, length, d_model)).astype("float32"))
    lengths = rng.integers(length // 2, length + 1, size=batch)
    mask = tf.constant(np.arange(length)[None] < lengths[:, None])[:, None, :]  # (b, 1, len)

    def compiled(layer):
        layer(x, x, attention_mask=mask, use_causal_mask=True)

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                y = layer(x, x, attention_mask=mask, use_causal_mask=True, training=True)
                loss = tf.reduce_sum(y * y)
            grads = tape.gradient(loss, layer.trainable_variables)
            return tf.add_n([tf.reduce_sum(g) for g in grads])

        step()
        return lambda: step().numpy()

    ours = MultiHeadAttention(heads, d_model // heads)
    theirs = keras.layers.MultiHeadAttention(heads, d_model // heads)
    functions = {"ours": compiled(ours), "keras": compiled(theirs)}
    ours.set_weights(theirs.get_weights())
    samples = benchmarking.round_robin(functions, repeats=args.repeats, steps=args.steps or 5)
    rows = {name: round(1000 * statistics.median(s), 1) for name, s in samples.items()}
    ratio = benchmarking.paired_ratio(samples["keras"], samples["ours"])
    print(
        f"\none causal self-attention layer with a padding mask, forward + backward, "
        f"batch {batch}, length {length}, d_model {d_model}, {heads} heads, float32, no XLA:"
    )
    print("| layer | ms per step |\n| --- | ---: |")
    print(f"| ours (keras_transformer.layers.MultiHeadAttention) | {rows['ours']} |")
    print(f"| keras.layers.MultiHeadAttention | {rows['keras']} |")
    print(f"keras time / ours (median of per-repeat ratios): {ratio:.2f}")
    return {"ms": rows, "keras_over_ours": round(ratio, 3)}


# --------------------------------------------------------------------------- data pipeline


def tutorial_pipeline(pairs, src_tok, tgt_tok, batch, max_length, cache=False):
    """The TF tutorial's `make_batches`: shuffle, batch, tokenize and pad each batch to its
    longest row, prefetch. The tutorial tokenizes every epoch (`cache=False`)."""
    sources = tf.constant([s for s, _ in pairs])
    targets = tf.constant([t for _, t in pairs])

    def prepare(s, t):
        def frame(ids, tok):
            ids = ids[:, : max_length - 2]
            start = tf.fill([ids.nrows(), 1], tf.cast(tok.start_id, ids.dtype))
            end = tf.fill([ids.nrows(), 1], tf.cast(tok.end_id, ids.dtype))
            return tf.concat([start, ids, end], axis=1)

        s = frame(src_tok.tokenize(s), src_tok).to_tensor()  # (batch, longest source)
        t = frame(tgt_tok.tokenize(t), tgt_tok)
        inputs = t[:, :-1].to_tensor()  # (batch, longest target - 1)
        labels = t[:, 1:].to_tensor()
        source = tf.cast(s, tf.int32)
        return {"source": source, "target": tf.cast(inputs, tf.int32)}, tf.cast(labels, tf.int32)

    ds = tf.data.Dataset.from_tensor_slices((sources, targets))
    ds = ds.shuffle(len(pairs), seed=0, reshuffle_each_iteration=True)
    ds = ds.batch(batch, drop_remainder=True).map(prepare, num_parallel_calls=tf.data.AUTOTUNE)
    if cache:  # tokenized batches kept; shapes then repeat every epoch (no reshuffle)
        ds = ds.cache()
    return ds.prefetch(tf.data.AUTOTUNE)


def padding_stats(dataset) -> tuple[int, int, int]:
    """(batches, non-padding label tokens, label positions computed) of one epoch."""
    batches = tokens = positions = 0
    for _, labels in dataset:
        batches += 1
        tokens += int(tf.math.count_nonzero(labels))
        positions += int(tf.size(labels))
    return batches, tokens, positions


def bench_pipeline(args) -> dict:
    defaults = TrainConfig()
    size = BENCHMARK_SIZES["tutorial"]
    batch, max_length = defaults.batch_size, defaults.max_length
    jit = use_xla(defaults.jit_compile)  # "auto": off on a CPU
    precision = resolve_precision(defaults.mixed_precision)  # "auto": float32 on a CPU
    say(f"numbers task, {args.num_train} training pairs; learning WordPiece vocabularies")
    task = load_task("numbers", num_train=args.num_train, num_validation=8, num_test=8)
    src = WordPieceTokenizer.learn([s for s, _ in task.train], 8000)
    tgt = WordPieceTokenizer.learn([t for _, t in task.train], 8000)
    kwargs = {k: size[k] for k in ("num_layers", "d_model", "num_heads", "dff")}

    def model(builder, jit_compile=False, policy=None):
        previous = keras.mixed_precision.global_policy().name
        keras.mixed_precision.set_global_policy(
            policy and {"bf16": "mixed_bfloat16", "fp16": "mixed_float16"}[policy] or "float32"
        )
        try:
            built = builder(src.vocab_size, tgt.vocab_size, max_length=64, **kwargs)
            built.compile(
                optimizer=make_optimizer(size["d_model"], 4000),
                loss=MaskedSparseCategoricalCrossentropy(),
                jit_compile=jit_compile,
            )
        finally:
            keras.mixed_precision.set_global_policy(previous)
        return built

    ours, tutorial = benchmarking.build_transformer, benchmarking.build_tutorial_transformer
    setups = {
        "A tutorial setup: per-batch padding, tokenized every epoch, d_model-wide heads": (
            tutorial_pipeline(task.train, src, tgt, batch, max_length),
            model(tutorial),
        ),
        "B our model, the tutorial's pipeline": (
            tutorial_pipeline(task.train, src, tgt, batch, max_length),
            model(ours),
        ),
        "C our model, per-batch padding, tokens cached": (
            tutorial_pipeline(task.train, src, tgt, batch, max_length, cache=True),
            model(ours),
        ),
        "D make_dataset padded to fixed bucket shapes (what XLA needs), cached, our model, "
        "XLA off": (
            make_dataset(task.train, src, tgt, batch_size=batch, max_length=max_length),
            model(ours),
        ),
        "D' package CPU defaults: make_dataset padded to each batch's longest pair (one narrow "
        f"bucket a batch), cached, our model, XLA {'on' if jit else 'off'}, "
        f"{precision or 'float32'}": (
            make_dataset(
                task.train, src, tgt, batch_size=batch, max_length=max_length, pad_to_bucket=jit
            ),
            model(ours, jit, precision),
        ),
    }
    if args.xla:
        setups["E make_dataset, our model, XLA on (one compilation per bucket shape)"] = (
            make_dataset(task.train, src, tgt, batch_size=batch, max_length=max_length),
            model(ours, True),
        )
    stats, first_epoch = {}, {}
    for name, (ds, net) in setups.items():
        stats[name] = padding_stats(ds)
        say(f"warm-up epoch (cache, tracing): {name}")
        start = time.perf_counter()
        net.fit(ds, epochs=1, verbose=0)
        first_epoch[name] = time.perf_counter() - start

    def epoch(ds, net):
        return lambda: net.fit(ds, epochs=1, verbose=0)

    functions = {name: epoch(ds, net) for name, (ds, net) in setups.items()}
    say("timing whole epochs round-robin (input pipeline included)")
    samples = benchmarking.round_robin(functions, repeats=args.repeats, steps=1, progress=say)
    names = list(setups)
    rows = []
    for name in names:
        batches, tokens, positions = stats[name]
        seconds = statistics.median(samples[name])
        rows.append(
            {
                "setup": name,
                "batches": batches,
                "non_padding_tokens": tokens,
                "padding_fraction": round(1 - tokens / positions, 3),
                "first_epoch_s": round(first_epoch[name], 1),
                "epoch_s": round(seconds, 2),
                "tokens_per_s": round(tokens / seconds, 1),
                # tokens/s ratio, per repeat: (tokens_x / t_x) / (tokens_A / t_A)
                "vs_tutorial": round(
                    benchmarking.paired_ratio(
                        [tokens / t for t in samples[name]],
                        [stats[names[0]][1] / t for t in samples[names[0]]],
                    ),
                    3,
                ),
            }
        )
    print(
        f"\nnumbers en->de, {args.num_train} training pairs, batch {batch}, max_length "
        f"{max_length}, tutorial model size (4 layers, d_model 128, 8 heads, dff 512); whole "
        f"epochs with model.fit, input included, {args.repeats} repeats, medians"
    )
    print(
        "| setup | padding | first epoch s | epoch s | non-pad tokens/s | vs A |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: |"
    )
    for r in rows:
        print(
            f"| {r['setup']} | {100 * r['padding_fraction']:.0f}% | {r['first_epoch_s']} | "
            f"{r['epoch_s']} | {r['tokens_per_s']:.0f} | {r['vs_tutorial']:.2f}x |"
        )
    return {"rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("section", choices=("models", "settings", "attention", "pipeline"))
    parser.add_argument("--size", choices=tuple(BENCHMARK_SIZES), default="tutorial")
    parser.add_argument("--variants", nargs="+", type=parse_variant, default=None)
    parser.add_argument("--steps", type=int, default=None, help="steps per variant per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--xla", action="store_true", help="models/pipeline: add XLA rows")
    parser.add_argument("--memory", action="store_true", help="peak memory, fresh process each")
    parser.add_argument("--attention-dropout", type=float, default=0.0)
    parser.add_argument("--num-train", type=int, default=2048, help="pipeline: training pairs")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args()
    info = benchmarking.machine_info()
    print("machine: " + benchmarking.describe_machine(info))
    print("command: python benchmarks/training.py " + " ".join(sys.argv[1:]))
    results = {"machine": info, "command": sys.argv}
    if args.section == "models":
        variants = args.variants or [
            (m, jit, "float32")
            for jit in ((False, True) if args.xla else (False,))
            for m in ("ours", "keras_mha", "keras_hub", "tutorial")
        ]
        results["models"] = run_training(args, variants)
    elif args.section == "settings":
        variants = args.variants or [
            ("ours", jit, precision)
            for jit in (False, True)
            for precision in ("float32", "mixed_bfloat16")
        ]
        results["settings"] = run_training(args, variants)
    elif args.section == "attention":
        results["attention"] = bench_attention(args)
    else:
        results["pipeline"] = bench_pipeline(args)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
