"""`keras-transformer train`: train an encoder-decoder and write a run directory.

Options left out keep the defaults of `TrainConfig` (`argparse.SUPPRESS`), so
building the parser (`keras-transformer --help`) imports no TensorFlow.
"""

from __future__ import annotations

import argparse

from keras_transformer._validation import POSITIVE, RATE

# The values of keras_transformer.training.config.ARCHITECTURES and STRATEGIES, repeated
# here so that the parser is built without importing TensorFlow (a test checks they agree).
ARCHITECTURES = ("encoder-decoder", "encoder", "decoder-only", "dual-encoder")
STRATEGIES = ("none", "mirrored", "multiworker", "tpu")


def register(sub) -> None:
    p = sub.add_parser(
        "train",
        argument_default=argparse.SUPPRESS,
        help="train an encoder-decoder Transformer and write a run directory",
        description="Train a translator (default: numbers en -> de, embedded, offline).",
    )
    p.add_argument(
        "--task",
        help="numbers, copy, reverse, sort, recall, tsv, ted_hrlr_pt_en, it-referent, imdb, "
        "reviews",
    )
    p.add_argument(
        "--architecture",
        choices=ARCHITECTURES,
        help="encoder-decoder (translation, the default); encoder (classification: "
        "it-referent, imdb, reviews); decoder-only (translation read as 'source [SEP] target', or the "
        "causal it-referent baseline); dual-encoder (sentence vectors from pairs, trained "
        "with in-batch negatives; reports retrieval accuracy@1 on the test pairs)",
    )
    p.add_argument("--source-lang")
    p.add_argument("--target-lang")
    p.add_argument("--data", help="tab-separated parallel file for --task tsv")
    p.add_argument(
        "--skip-malformed",
        action="store_true",
        help="--task tsv: leave out malformed lines (counted in a warning) instead of failing",
    )
    p.add_argument("--num-train", type=int, help="training pairs (task default)")
    p.add_argument("--num-validation", type=int, help="validation pairs")
    p.add_argument("--num-test", type=int, help="test pairs")
    add_run_arguments(p)
    p.add_argument(
        "--time-budget",
        metavar="DURATION",
        help="train as well as possible in this wall-clock time (90s, 10m, 1.5h): the "
        "learning rate warms up, then decays to zero as the time runs out, and the best "
        "checkpoint is kept. With --task tsv the model size is chosen to fit the budget",
    )
    p.add_argument("--label-smoothing", type=RATE, help="a number in [0, 1)")
    p.add_argument(
        "--learning-rate",
        type=POSITIVE,
        help="constant Adam learning rate (default: the paper's warm-up schedule)",
    )
    p.add_argument(
        "--init-from",
        metavar="RUN_DIR",
        help="fine-tune the encoder of a keras-transformer pretrain run (--architecture "
        "encoder, --task reviews or imdb); its tokenizer and sizes are used",
    )
    p.add_argument(
        "--freeze-embeddings",
        action="store_true",
        help="keep the token embeddings fixed (classification runs): with a small labelled "
        "set, words seen only in pre-training keep their place beside the seen ones",
    )
    p.add_argument("--out", help="run directory (default: runs/<task>_<src>_<tgt>)")
    p.add_argument("--seed", type=int)
    p.add_argument("--jit-compile", choices=("auto", "on", "off"))
    p.add_argument(
        "--mixed-precision",
        choices=("auto", "bf16", "fp16", "none"),
        help="auto (default): bf16 on GPUs of compute capability >= 8.0, fp16 on >= 7.0, "
        "float32 on CPU (where mixed precision measured slower); logits stay float32",
    )
    p.add_argument("--overwrite", action="store_true", help="replace a finished run in --out")
    p.add_argument(
        "--strategy",
        choices=STRATEGIES,
        help="tf.distribute strategy: none (one device), mirrored (all local GPUs, or "
        "--cpu-devices N logical CPUs), multiworker (hosts listed in the TF_CONFIG "
        "environment variable), tpu (TPUStrategy; TPU_NAME or a Cloud TPU VM). "
        "--batch-size is the global batch, split across the replicas. See docs/scaling.md",
    )
    p.add_argument(
        "--cpu-devices",
        type=int,
        metavar="N",
        help="with --strategy mirrored: split the CPU into N logical devices (testing "
        "the multi-replica path without GPUs)",
    )
    p.set_defaults(func=_train)


RUN_OPTIONS = (
    ("epochs", int), ("batch_size", int), ("max_length", int), ("num_layers", int),
    ("d_model", int), ("num_heads", int), ("dff", int), ("dropout", float),
    ("vocab_size", int), ("warmup_steps", int),
)  # fmt: skip
"""The options `train` and `pretrain` share (model sizes and the recipe), with their types."""


def add_run_arguments(parser) -> None:
    """`--epochs`, `--d-model`, ... (their defaults are the run config's)."""
    for name, kind in RUN_OPTIONS:
        # The one float, --dropout, is a rate in [0, 1): checked (finite) while parsing.
        parser.add_argument(f"--{name.replace('_', '-')}", type=RATE if kind is float else kind)


def run_command(config_class, run, args, none_option: str, keys: tuple[str, ...]) -> dict:
    """Builds the run config from `args` (`"none"` for `none_option` means None), runs
    it, and prints the run directory and the `keys` of its metrics; returns the metrics."""
    options = {k: v for k, v in vars(args).items() if k not in ("command", "func")}
    if options.get(none_option) == "none":
        options[none_option] = None
    config = config_class(**options)
    metrics = run(config)
    print(f"run directory: {config.run_dir}")
    for key in keys:
        if key in metrics:
            print(f"{key}: {metrics[key]}")
    return metrics


def _train(args) -> int:
    from keras_transformer.training.run import TrainConfig, train

    keys = (
        "test_retrieval_accuracy_at_1",  # dual encoder
        "test_reverse_retrieval_accuracy_at_1",
        "test_accuracy",  # classification: it-referent, imdb, reviews
        "chance_accuracy",
        "test_exact_match",  # translation
        "test_token_accuracy",
        "test_bleu",
        "test_chrf",
        "train_seconds",
        "train_tokens_per_second",
        "parameters",
    )
    metrics = run_command(TrainConfig, train, args, "mixed_precision", keys)
    if metrics["samples"] and "source" in metrics["samples"][0]:
        print("sample test translations:")
    for sample in metrics["samples"]:
        if "query" in sample:
            print(
                f"  {sample['query']}  ->  {sample['retrieved']}   (reference: {sample['reference']})"
            )
        elif "sentence" in sample:
            print(f"  {sample['sentence']}  'it' -> {sample['prediction']}")
        else:
            print(
                f"  {sample['source']}  ->  {sample['prediction']}   (reference: {sample['reference']})"
            )
    return 0
