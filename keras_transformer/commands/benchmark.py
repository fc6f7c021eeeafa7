"""`keras-transformer benchmark`: time training steps (ours against peers) and decoding here."""

PRECISION_FLAGS = {"fp32": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
# benchmarks/harness.py's MODELS and SIZES, repeated: `--help` imports no TensorFlow.
MODELS = ("ours", "keras_mha", "keras_hub", "tutorial")
SIZES = ("tutorial", "base", "tiny")


def register(sub) -> None:
    # fmt: off
    p = sub.add_parser("benchmark", description=__doc__.splitlines()[0], help="measure training "
                       "throughput (ours against Keras peers) and decoding speed")
    p.add_argument("--size", choices=SIZES, default="tutorial",
                   help="tutorial (the TF tutorial's model, batch 64 x 128; minutes on a 2-core "
                   "CPU), base (the paper's base model, batch 8 x 128), tiny (seconds)")
    p.add_argument("--models", nargs="+", choices=MODELS, default=["ours", "keras_mha"],
                   help="models to time (keras_hub needs `pip install keras-hub`; skipped if "
                   "missing)")
    p.add_argument("--xla", choices=("off", "on", "both"), default="off",
                   help="compile the training step with XLA")
    p.add_argument("--precision", nargs="+", choices=tuple(PRECISION_FLAGS), default=["fp32"],
                   help="fp32, bf16 (mixed_bfloat16), fp16 (mixed_float16)")
    p.add_argument("--steps", type=int, default=1, help="training steps per variant per repeat")
    p.add_argument("--repeats", type=int, default=3, help="round-robin repeats (medians)")
    p.add_argument("--memory", action="store_true",
                   help="also measure each variant's peak memory in a fresh process (slower)")
    p.add_argument("--decoding", action="store_true",
                   help="also time greedy decoding with and without the key/value cache")
    p.add_argument("--new-tokens", type=int, default=32, help="tokens decoded with --decoding")
    p.add_argument("--decode-batch", type=int, default=8, help="batch of --decoding")
    p.add_argument("--json", default=None, help="write the results to this JSON file")
    p.set_defaults(func=_benchmark)
    # fmt: on


def _benchmark(args) -> int:
    from keras_transformer.commands._benchmarks import load

    return load("harness").main(args, PRECISION_FLAGS)
