"""`keras-transformer train`: train a Transformer of any architecture and write a run directory."""

import argparse
import functools
import os
import shlex

from keras_transformer.choices import (
    ARCHITECTURES,
    DATA_SIZED_TASKS,
    JIT_COMPILE,
    PRECISION_FLAGS,
    STRATEGIES,
    TASKS,
)
from keras_transformer.commands._arguments import (
    POSITIVE,
    RATE,
    config_defaults,
    dataclass_default,
    duration,
    int_flag,
)
from keras_transformer.guides import guide_command

# The options train and pretrain share (model sizes and the recipe), with their types and help.
RUN_OPTIONS = (
    ("epochs", int),
    ("batch_size", int),
    ("max_length", int),
    ("num_layers", int),
    ("d_model", int),
    ("num_heads", int),
    ("dff", int),
    ("dropout", float),
    ("vocab_size", int),
    ("warmup_steps", int),
)
RUN_HELP = {
    "epochs": "passes over the training data; without --time-budget, early stopping ends the "
    "run sooner after 4 epochs without a lower validation loss",
    "batch_size": "examples per update (with --strategy: the global batch)",
    "max_length": "tokens per sequence, [START] and [END] included",
    "num_layers": "layers per stack (N of the paper)",
    "d_model": "model width: embeddings and every sub-layer's output",
    "num_heads": "attention heads; each gets d_model / num_heads dimensions (must divide --d-model)",
    "dff": "inner size of each feed-forward sub-layer",
    "dropout": "dropout on sub-layer outputs and embeddings, in [0, 1)",
    "vocab_size": "WordPiece vocabulary size: per language for encoder-decoder, one shared "
    "vocabulary for decoder-only and dual-encoder",
    "warmup_steps": "updates over which the learning rate rises before it decays",
}
DESCRIPTION = """\
Train a Transformer on a task and write a run directory (model.keras, vocabularies,
config.json, history.csv, metrics.json, plots). What is trained depends on
--architecture:
  encoder-decoder  translation, as in the paper: source -> target (default task:
                   numbers, English -> German number words, generated offline)
  encoder          classification: one label per text (--task imdb, reviews) or
                   per token (--task it-referent)
  decoder-only     a language model over 'source [SEP] target' that translates by
                   continuing the text, or the causal it-referent baseline
  dual-encoder     sentence vectors from translation pairs, scored by retrieval
                   accuracy@1
An interrupted run (Ctrl-C, SIGTERM, a crash) is resumed by running the same command,
with or without --overwrite."""

OVERWRITE_HELP = (
    "replace the run in --out if it is finished or was started with other settings: its "
    "files (model, history, checkpoints, plots, tokenizers, ...) are deleted, other files in "
    "the directory are kept. An unfinished run with the same settings is resumed, not "
    "restarted; delete the directory to start it again"
)
"""`--overwrite` of train and pretrain: `runs.RunDirectory.overwrites` and `clear`."""


def register(sub) -> None:
    p = sub.add_parser(
        "train",
        argument_default=argparse.SUPPRESS,  # options left out keep TrainConfig's
        help="train a Transformer (translator, classifier, language model or sentence "
        "encoder) and write a run directory",
        description=DESCRIPTION,
    )
    p.add_argument(
        "--task", choices=TASKS, metavar="TASK", help="what to learn: " + ", ".join(TASKS)
    )
    p.add_argument(
        "--architecture",
        choices=ARCHITECTURES,
        help="encoder-decoder (translation); encoder (classification); "
        "decoder-only ('source [SEP] target', or the causal it-referent baseline); "
        "dual-encoder (sentence vectors from pairs; retrieval accuracy@1)",
    )
    p.add_argument(
        "--source-lang", help="--task numbers: language of the source numbers (en, de, fr, ...)"
    )
    p.add_argument("--target-lang", help="--task numbers: language of the target numbers")
    p.add_argument(
        "--data", help="tab-separated parallel file for --task tsv (--data alone means --task tsv)"
    )
    p.add_argument(
        "--skip-malformed",
        action="store_true",
        help="--task tsv: leave out malformed lines (with a warning) instead of failing",
    )
    p.add_argument(
        "--columns",
        metavar="S,T",
        help="--task tsv or spa_eng: the 1-based columns of source and target; 2,1 "
        "swaps the direction, extra columns (Anki's attribution) are ignored "
        "(default: 1,2)",
    )
    p.add_argument(
        "--validation-data",
        metavar="FILE",
        help="--task tsv: validation pairs (same format as --data) instead of a split "
        "of --data (default: 10%% of --data's sources)",
    )
    p.add_argument(
        "--test-data",
        metavar="FILE",
        help="--task tsv: test pairs instead of a split of --data; with "
        "--validation-data too, all of --data trains (default: 10%% of --data's "
        "sources)",
    )
    p.add_argument("--num-train", type=int, help="training examples")
    p.add_argument("--num-validation", type=int, help="validation examples")
    p.add_argument("--num-test", type=int, help="test examples")
    add_run_arguments(p)
    p.add_argument(
        "--time-budget",
        metavar="DURATION",
        type=duration,
        help="train as well as possible in this wall-clock time (90s, 10m, 1.5h): the whole "
        "command's, setup and evaluation included; a resumed run gets what is left of it. "
        f"With --task {'/'.join(DATA_SIZED_TASKS)} the model size is chosen to fit it",
    )
    p.add_argument("--label-smoothing", type=RATE, help="label smoothing of the loss, in [0, 1)")
    p.add_argument(
        "--learning-rate",
        type=POSITIVE,
        help="constant Adam learning rate (default: none: a warm-up then a cosine decay "
        f"planned for the run's updates on --task {'/'.join(DATA_SIZED_TASKS)}, the generated "
        "tasks and with --time-budget; else the paper's warm-up then 1/sqrt(step) decay; "
        "dual-encoder: 0.001)",
    )
    p.add_argument(
        "--init-from",
        metavar="RUN_DIR",
        help="start from a finished run: continue a translation run (encoder-decoder or "
        "decoder-only: its weights, tokenizers and sizes, with new data, budget or "
        "epochs), or fine-tune the encoder of a pretrain run (--architecture encoder, "
        "--task reviews or imdb)",
    )
    p.add_argument(
        "--fresh-weights",
        action="store_true",
        help="with --init-from: take that run's vocabulary and sizes but start from new random "
        "weights (the from-scratch side of a fine-tuning comparison)",
    )
    p.add_argument(
        "--freeze-embeddings",
        action="store_true",
        help="keep the token embeddings fixed (classification on a small labelled set)",
    )
    p.add_argument(
        "--out", help="run directory (default: runs/<task>[_<src>_<tgt>][_<architecture>])"
    )
    p.add_argument("--seed", type=int, help="seed of the data, the initial weights and dropout")
    p.add_argument(
        "--jit-compile",
        choices=JIT_COMPILE,
        help="compile the training step with XLA; auto: on a GPU only (it slows small "
        "models on CPU)",
    )
    p.add_argument(
        "--mixed-precision",
        choices=PRECISION_FLAGS,
        help="auto (default): bf16 on GPUs of compute capability >= 8.0, fp16 on >= "
        "7.0, float32 on CPU and for the architectures other than encoder-decoder; logits "
        "stay float32",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help=OVERWRITE_HELP,
    )
    p.add_argument(
        "--strategy",
        choices=STRATEGIES,
        help="tf.distribute strategy: none, mirrored (local GPUs or --cpu-devices), "
        "multiworker (TF_CONFIG), tpu; --batch-size is global. The scaling guide: "
        f"`{guide_command('scaling')}`",
    )
    p.add_argument(
        "--cpu-devices",
        type=int,
        metavar="N",
        help="with --strategy mirrored: split the CPU into N logical devices",
    )
    config_defaults(p, train_default)  # every option's "(default: ...)", read from TrainConfig
    p.set_defaults(func=_train)


def train_default(name: str) -> str:
    """The default of `--NAME` as `train --help` shows it, read from `TrainConfig` (and, for the
    sizes a task leaves to the data, `FIXED_SIZES`); imports no TensorFlow."""
    from keras_transformer.choices import DATA_SIZED_TASKS, GENERATED_TASKS
    from keras_transformer.models.config import TransformerConfig
    from keras_transformer.training.config import (
        BUDGET_EPOCHS,
        DEFAULT_DROPOUT,
        FIXED_SIZES,
        TrainConfig,
    )

    sized = "/".join(DATA_SIZED_TASKS)
    if name in FIXED_SIZES:
        model_default = getattr(TransformerConfig(), name, None)
        home = "TransformerConfig: " if FIXED_SIZES[name] == model_default else ""
        text = f"{home}{FIXED_SIZES[name]}; --task {sized}: chosen from the data"
        if name == "epochs":
            text += f"; with --time-budget: up to {BUDGET_EPOCHS}, the budget ends the run"
        return text
    if name == "dropout":  # TrainConfig.__post_init__, training.planning.default_dropout
        from keras_transformer.training.planning import FEW_PASSES, MODEL_SIZES, RUNG_DROPOUT

        rungs = "; ".join(
            f"{value:g} for the {size.num_layers} x {size.d_model} model if the run plans at "
            f"most {FEW_PASSES:g} passes over the data"
            for size in MODEL_SIZES
            for rung, value in RUNG_DROPOUT.items()
            if size.name == rung
        )
        return (
            f"0 on the generated tasks ({', '.join(GENERATED_TASKS)}): nothing to overfit; "
            f"--task {sized}: {rungs}; else {DEFAULT_DROPOUT} (-v prints the one chosen)"
        )
    if name == "warmup_steps":  # TrainConfig.__post_init__ and training.planning
        return (
            "8% of the planned updates, within [10, 4000], on --task "
            f"{sized}, the generated tasks and with --time-budget; else 1000"
        )
    if name == "num_train" or name == "num_validation" or name == "num_test":
        return "the task's"
    return dataclass_default(TrainConfig, name)


def add_run_arguments(parser) -> None:
    """`--epochs`, `--d-model`, ... (defaults: the run config's); `--dropout` parsed as a RATE."""
    for name, kind in RUN_OPTIONS:
        flag_type = RATE if kind is float else int_flag(4 if name == "max_length" else 1)
        parser.add_argument(f"--{name.replace('_', '-')}", type=flag_type, help=RUN_HELP[name])


def run_command(config_class, run, args, none_option: str, keys: tuple[str, ...]) -> dict:
    """Runs `config_class(**args)` (`"none"` for `none_option`: None), prints its `keys`."""
    ignored = ("command", "func", "started", "argv")
    options = {k: v for k, v in vars(args).items() if k not in ignored}
    if options.get(none_option) == "none":
        options[none_option] = None
    config = config_class(**options)
    try:
        metrics = run(config)
    except KeyboardInterrupt as interrupt:  # cli.main prints one line with this hint
        stage = getattr(interrupt, "stage", "while starting")  # train's RunClock.stage
        kept = (
            f" (its progress is kept in {config.run_dir})" if os.path.isdir(config.run_dir) else ""
        )
        interrupt.resume_hint = f"{stage}; {resume_text(args)}{kept}"
        raise
    print(f"run directory: {config.run_dir}")
    for key in (key for key in keys if key in metrics):
        if metrics[key] is None and f"{key}_left_out" in metrics:  # a score that means nothing
            print(f"{key}: left out: {metrics[f'{key}_left_out']}")
        else:
            print(f"{key}: {metrics[key]}")
    return metrics


def resume_text(args) -> str:
    """How to resume an interrupted run: "run the same command", or the command without
    `--overwrite` when it had one (a resume must never start the run again)."""
    argv = getattr(args, "argv", None)
    if argv is None or not any(_is_overwrite(arg) for arg in argv):
        return "run the same command to resume"
    command = shlex.join(["keras-transformer", *(a for a in argv if not _is_overwrite(a))])
    return f"resume with: {command}"


def _is_overwrite(arg: str) -> bool:  # argparse also takes an unambiguous prefix (--overw)
    return len(arg) > len("--o") and "--overwrite".startswith(arg)


def _train(args) -> int:
    from keras_transformer.training.config import TrainConfig
    from keras_transformer.training.run import train

    # dual encoder; classification (it-referent, imdb, reviews); translation; every run
    keys = (
        "test_retrieval_accuracy_at_1",
        "test_reverse_retrieval_accuracy_at_1",
        "test_accuracy",
        "chance_accuracy",
        "test_exact_match",
        "test_token_accuracy",
        "test_bleu",
        "test_chrf",
        "train_seconds",
        "train_tokens_per_second",
        "parameters",
    )
    if "task" not in vars(args) and any(
        name in vars(args) for name in ("data", "validation_data", "test_data")
    ):
        args.task = "tsv"  # `train --data FILE` means the user's own tab-separated pairs
    # --time-budget counts from the command's start (cli.main), imports included
    started = getattr(args, "started", None)
    metrics = run_command(
        TrainConfig, functools.partial(train, started=started), args, "mixed_precision", keys
    )
    if metrics["samples"] and "source" in metrics["samples"][0]:
        print("sample test translations:")
    for sample in metrics["samples"]:
        if "sentence" in sample and "query" not in sample:
            print(f"  {sample['sentence']}  'it' -> {sample['prediction']}")
            continue
        pair = ("query", "retrieved") if "query" in sample else ("source", "prediction")
        print(f"  {sample[pair[0]]}  ->  {sample[pair[1]]}   (reference: {sample['reference']})")
    return 0
