"""The lists of choices the command line and the configs share, defined once.

Imports nothing (no Keras, no TensorFlow), so `keras-transformer --help` stays fast.
"""

ARCHITECTURES: tuple[str, ...] = ("encoder-decoder", "encoder", "decoder-only", "dual-encoder")
"""Values of `TrainConfig.architecture` / `--architecture`."""

TRANSLATING_ARCHITECTURES: tuple[str, ...] = ("encoder-decoder", "decoder-only")
"""The architectures whose runs `translate` and `export` serve."""

STRATEGIES: tuple[str, ...] = ("none", "mirrored", "multiworker", "tpu")
"""The names `make_strategy` (and `keras-transformer train --strategy`) accept."""

TOKEN_TASKS: tuple[str, ...] = ("it-referent",)
"""Tasks labelled at one token, trained with `build_token_classifier`."""

SEQUENCE_TASKS: tuple[str, ...] = ("imdb", "reviews")
"""Tasks labelled per sequence, trained with `build_classifier` (encoder only)."""

GENERATED_TASKS: tuple[str, ...] = ("numbers", "copy", "reverse", "sort", "recall")
"""Tasks drawn from a rule: fresh examples, nothing to overfit, trained without dropout."""

TRANSLATION_TASKS: tuple[str, ...] = (*GENERATED_TASKS, "tsv", "spa_eng", "ted_hrlr_pt_en")
"""Pair tasks: translated by an encoder-decoder, learnt as "source [SEP] target" by a decoder."""

TASKS: tuple[str, ...] = (*TRANSLATION_TASKS, *TOKEN_TASKS, *SEQUENCE_TASKS)
"""Every task `train --task` accepts."""

DATA_SIZED_TASKS: tuple[str, ...] = ("tsv", "spa_eng")
"""Tasks whose sizes left unset are chosen from the corpus (`training.planning`)."""

DTYPE_POLICIES: dict[str, str] = {
    "fp32": "float32",
    "bf16": "mixed_bfloat16",
    "fp16": "mixed_float16",
}
"""The precisions the package trains and times at: short name -> Keras dtype policy, and the
values of `keras-transformer benchmark --precision`. The one vocabulary; the lists below are
derived from it."""

MIXED_PRECISIONS: dict[str, str] = {k: v for k, v in DTYPE_POLICIES.items() if k != "fp32"}
"""The mixed precisions: bf16, fp16."""

PRECISIONS: dict[str | None, str] = {
    None: DTYPE_POLICIES["fp32"],
    "none": DTYPE_POLICIES["fp32"],
    **MIXED_PRECISIONS,
}
"""Keras dtype policies of `train --mixed-precision` ("none": no mixed precision, float32;
`TrainConfig.mixed_precision` also takes None); `"auto"` resolves to one of them."""

PRECISION_FLAGS: tuple[str, ...] = ("auto", *MIXED_PRECISIONS, "none")
"""Values of `train --mixed-precision`."""

PRECISION_NAMES: dict[str, str] = {policy: name for name, policy in DTYPE_POLICIES.items()}
"""The short name of each dtype policy (`"mixed_bfloat16"` -> `"bf16"`), for tables."""

JIT_COMPILE: tuple[str, ...] = ("auto", "on", "off")
"""Values of `--jit-compile` (`train`, `translate`) and `TrainConfig.jit_compile`."""

FEW_TEXTS = 256
"""Up to this many texts known ahead (`translate`'s TEXT arguments, the pairs a `train` run
evaluates on), a search's `jit_compile="auto"` is off (`inference.resolve_jit_compile`): XLA
compiles each search and batch size, seconds each on a 2-core CPU, and saved 0.01-0.2 s a batch
after that (benchmarks/translate_startup.py; docs/performance.md, "What `translate` runs by
default")."""

COMPARISON_SIZES: tuple[str, ...] = ("tiny", "quick", "full")
"""`keras-transformer compare --size`: the keys of `analysis.comparison.SIZES`."""

BENCHMARK_SIZES: dict[str, dict[str, int]] = {
    "tutorial": dict(
        num_layers=4, d_model=128, num_heads=8, dff=512, vocab=8000, batch=64, length=128
    ),
    "base": dict(num_layers=6, d_model=512, num_heads=8, dff=2048, vocab=8000, batch=8, length=128),
    "tiny": dict(num_layers=1, d_model=32, num_heads=4, dff=64, vocab=200, batch=8, length=16),
}
"""`keras-transformer benchmark --size`: model and batch sizes: the TensorFlow tutorial's, the paper's base model (batch 8: a short run)
and `tiny` (seconds: tests, a first look). Real lengths are uniform in `[length // 2, length]`."""

BENCHMARK_MODELS: tuple[str, ...] = ("ours", "keras_mha", "keras_hub", "tutorial")
"""`keras-transformer benchmark --models`: ours, Keras's MultiHeadAttention, KerasHub, the TF tutorial."""
