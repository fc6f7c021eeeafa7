"""`keras-transformer benchmark`: time training steps (ours against peers) and decoding here."""

import json
import os
import time

from keras_transformer.choices import BENCHMARK_MODELS, BENCHMARK_SIZES, DTYPE_POLICIES
from keras_transformer.commands._arguments import int_flag
from keras_transformer.errors import UserInputError


def register(sub) -> None:
    p = sub.add_parser(
        "benchmark",
        description=__doc__.splitlines()[0],
        help="measure training throughput (ours against Keras peers) and decoding speed",
    )
    p.add_argument(
        "--size",
        choices=tuple(BENCHMARK_SIZES),
        default="tutorial",
        help="tutorial (the TF tutorial's model, batch 64 x 128; minutes on a 2-core "
        "CPU), base (the paper's base model, batch 8 x 128), tiny (seconds)",
    )
    p.add_argument(
        "--models",
        nargs="+",
        choices=BENCHMARK_MODELS,
        default=["ours", "keras_mha"],
        help="models to time (keras_hub needs `pip install keras-hub`; skipped if missing)",
    )
    p.add_argument(
        "--xla",
        choices=("off", "on", "both"),
        default="off",
        help="compile the training step with XLA",
    )
    p.add_argument(
        "--precision",
        nargs="+",
        choices=tuple(DTYPE_POLICIES),
        default=["fp32"],
        help="fp32, bf16 (mixed_bfloat16), fp16 (mixed_float16)",
    )
    p.add_argument(
        "--steps", type=int_flag(1), default=1, help="training steps per variant per repeat"
    )
    p.add_argument("--repeats", type=int_flag(1), default=3, help="round-robin repeats (medians)")
    p.add_argument(
        "--memory",
        action="store_true",
        help="also measure each variant's peak memory in a fresh process (slower)",
    )
    p.add_argument(
        "--decoding",
        action="store_true",
        help="also time greedy decoding with and without the key/value cache",
    )
    p.add_argument(
        "--new-tokens", type=int_flag(1), default=32, help="tokens decoded with --decoding"
    )
    p.add_argument("--decode-batch", type=int_flag(1), default=8, help="batch of --decoding")
    p.add_argument(
        "--json",
        default=None,
        help="also write the results to this JSON file (default: none, the table is only printed)",
    )
    p.set_defaults(func=_benchmark)


def _benchmark(args) -> int:
    """Times the variants, prints the table, writes `--json`."""
    import tensorflow as tf

    from keras_transformer.analysis.throughput import (
        BLOCK_SIZES,
        benchmark_decoding,
        benchmark_training,
        describe_machine,
        format_training_table,
        keras_hub_available,
        machine_info,
    )
    from keras_transformer.models import build_transformer

    tf.get_logger().setLevel("ERROR")
    if args.json and os.path.isdir(args.json):
        raise IsADirectoryError(f"--json {args.json} is a directory; pass a file name")
    start = time.perf_counter()

    def progress(message: str) -> None:
        print(f"[{time.perf_counter() - start:6.1f}s] {message}", flush=True)

    models = list(dict.fromkeys(args.models))
    if "keras_hub" in models and not keras_hub_available():
        print(
            "note: KerasHub is not installed; skipping the keras_hub peer (pip install keras-hub)"
        )
        models.remove("keras_hub")
    if not models:
        raise UserInputError("no model left to benchmark; pass --models ours (and peers)")
    xla = {"off": (False,), "on": (True,), "both": (False, True)}[args.xla]
    precisions = [DTYPE_POLICIES[p] for p in dict.fromkeys(args.precision)]
    variants = [(m, jit, p) for p in precisions for jit in xla for m in models]

    info = machine_info()
    print("machine: " + describe_machine(info))
    options = dict(steps=args.steps, repeats=args.repeats, memory=args.memory)
    training = benchmark_training(args.size, variants, progress=progress, **options)
    results = {"machine": info, "training": training}
    size = training["size"]
    print(
        f"training, {args.size} size ({size['num_layers']} layers, d_model {size['d_model']}, "
        f"{size['num_heads']} heads, dff {size['dff']}, vocabulary {size['vocab']}, batch "
        f"{size['batch']} x length {size['length']}, {training['tokens_per_step']} non-padding "
        f"tokens); matmul peak {training['matmul_peak_gflops']} GFLOP/s"
    )
    print(format_training_table(training))

    if args.decoding:
        progress("decoding: greedy search with and without the key/value cache")
        sizes = {k: size[k] for k in BLOCK_SIZES} | {"max_length": max(64, args.new_tokens + 1)}
        model = build_transformer(size["vocab"], size["vocab"], **sizes)
        results["decoding"] = decoding = benchmark_decoding(
            model, new_tokens=args.new_tokens, batch=args.decode_batch, repeats=args.repeats
        )
        print(
            f"decoding {decoding['new_tokens']} tokens at batch {decoding['batch']}: "
            f"cached {decoding['cached_tokens_per_s']:.0f} tokens/s, uncached "
            f"{decoding['uncached_tokens_per_s']:.0f} tokens/s, cache speed-up "
            f"{decoding['cache_speedup']:.2f}x"
        )
    if args.json:
        if os.path.dirname(args.json):
            os.makedirs(os.path.dirname(args.json), exist_ok=True)
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)
        print(f"wrote {args.json}")
    print(f"total {time.perf_counter() - start:.1f}s")
    return 0
