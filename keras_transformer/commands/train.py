"""`keras-transformer train`: train an encoder-decoder and write a run directory."""

import argparse

from keras_transformer.choices import (
    ARCHITECTURES,
    JIT_COMPILE,
    PRECISION_FLAGS,
    STRATEGIES,
    TASKS,
)
from keras_transformer.commands._arguments import POSITIVE, RATE

# The options train and pretrain share (model sizes and the recipe), with their types.
RUN_OPTIONS = (("epochs", int), ("batch_size", int), ("max_length", int), ("num_layers", int),
               ("d_model", int), ("num_heads", int), ("dff", int), ("dropout", float),
               ("vocab_size", int), ("warmup_steps", int))  # fmt: skip


def register(sub) -> None:
    # fmt: off
    p = sub.add_parser(
        "train", argument_default=argparse.SUPPRESS,  # options left out keep TrainConfig's
        help="train an encoder-decoder Transformer and write a run directory",
        description="Train a translator (default: numbers en -> de, embedded, offline).")
    p.add_argument("--task", choices=TASKS, metavar="TASK", help=", ".join(TASKS))
    p.add_argument("--architecture", choices=ARCHITECTURES,
                   help="encoder-decoder (translation, the default); encoder (classification); "
                   "decoder-only ('source [SEP] target', or the causal it-referent baseline); "
                   "dual-encoder (sentence vectors from pairs; retrieval accuracy@1)")
    p.add_argument("--source-lang")
    p.add_argument("--target-lang")
    p.add_argument("--data", help="tab-separated parallel file for --task tsv")
    p.add_argument("--skip-malformed", action="store_true",
                   help="--task tsv: leave out malformed lines (with a warning) instead of failing")
    p.add_argument("--columns", metavar="S,T",
                   help="--task tsv or spa_eng: the 1-based columns of source and target; 2,1 "
                   "swaps the direction, extra columns (Anki's attribution) are ignored "
                   "(default: 1,2)")
    p.add_argument("--validation-data", metavar="FILE",
                   help="--task tsv: validation pairs (same format as --data) instead of a split "
                   "of --data (default: 10%% of --data's sources)")
    p.add_argument("--test-data", metavar="FILE",
                   help="--task tsv: test pairs instead of a split of --data; with "
                   "--validation-data too, all of --data trains (default: 10%% of --data's "
                   "sources)")
    p.add_argument("--num-train", type=int, help="training pairs (task default)")
    p.add_argument("--num-validation", type=int, help="validation pairs")
    p.add_argument("--num-test", type=int, help="test pairs")
    add_run_arguments(p)
    p.add_argument("--time-budget", metavar="DURATION",
                   help="train as well as possible in this wall-clock time (90s, 10m, 1.5h); with "
                   "--task tsv the model size is chosen to fit it")
    p.add_argument("--label-smoothing", type=RATE, help="a number in [0, 1)")
    p.add_argument("--learning-rate", type=POSITIVE,
                   help="constant Adam learning rate (default: the paper's warm-up schedule)")
    p.add_argument("--init-from", metavar="RUN_DIR",
                   help="fine-tune the encoder of a keras-transformer pretrain run (--architecture "
                   "encoder, --task reviews or imdb); its tokenizer and sizes are used")
    p.add_argument("--freeze-embeddings", action="store_true",
                   help="keep the token embeddings fixed (classification on a small labelled set)")
    p.add_argument("--out", help="run directory (default: runs/<task>_<src>_<tgt>)")
    p.add_argument("--seed", type=int)
    p.add_argument("--jit-compile", choices=JIT_COMPILE)
    p.add_argument("--mixed-precision", choices=PRECISION_FLAGS,
                   help="auto (default): bf16 on GPUs of compute capability >= 8.0, fp16 on >= "
                   "7.0, float32 on CPU; logits stay float32")
    p.add_argument("--overwrite", action="store_true", help="replace a finished run in --out")
    p.add_argument("--strategy", choices=STRATEGIES,
                   help="tf.distribute strategy: none, mirrored (local GPUs or --cpu-devices), "
                   "multiworker (TF_CONFIG), tpu; --batch-size is global. See docs/scaling.md")
    p.add_argument("--cpu-devices", type=int, metavar="N",
                   help="with --strategy mirrored: split the CPU into N logical devices")
    p.set_defaults(func=_train)
    # fmt: on


def add_run_arguments(parser) -> None:
    """`--epochs`, `--d-model`, ... (defaults: the run config's); `--dropout` parsed as a RATE."""
    for name, kind in RUN_OPTIONS:
        parser.add_argument(f"--{name.replace('_', '-')}", type=RATE if kind is float else kind)


def run_command(config_class, run, args, none_option: str, keys: tuple[str, ...]) -> dict:
    """Runs `config_class(**args)` (`"none"` for `none_option`: None), prints its `keys`."""
    options = {k: v for k, v in vars(args).items() if k not in ("command", "func")}
    if options.get(none_option) == "none":
        options[none_option] = None
    config = config_class(**options)
    metrics = run(config)
    print(f"run directory: {config.run_dir}")
    for key in (key for key in keys if key in metrics):
        print(f"{key}: {metrics[key]}")
    return metrics


def _train(args) -> int:
    from keras_transformer.training.config import TrainConfig
    from keras_transformer.training.run import train

    # dual encoder; classification (it-referent, imdb, reviews); translation; every run
    keys = ("test_retrieval_accuracy_at_1", "test_reverse_retrieval_accuracy_at_1", "test_accuracy",
            "chance_accuracy", "test_exact_match", "test_token_accuracy", "test_bleu", "test_chrf",
            "train_seconds", "train_tokens_per_second", "parameters")  # fmt: skip
    metrics = run_command(TrainConfig, train, args, "mixed_precision", keys)
    if metrics["samples"] and "source" in metrics["samples"][0]:
        print("sample test translations:")
    for sample in metrics["samples"]:
        if "sentence" in sample and "query" not in sample:
            print(f"  {sample['sentence']}  'it' -> {sample['prediction']}")
            continue
        pair = ("query", "retrieved") if "query" in sample else ("source", "prediction")
        print(f"  {sample[pair[0]]}  ->  {sample[pair[1]]}   (reference: {sample['reference']})")
    return 0
