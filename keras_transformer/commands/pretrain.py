"""`keras-transformer pretrain`: masked-LM pre-training of an encoder, then the fine-tuning test
(two `train` runs, `fine_tuning.compare_fine_tuning`)."""

import argparse
import os

from keras_transformer.choices import SEQUENCE_TASKS
from keras_transformer.commands._arguments import (
    FRACTION,
    POSITIVE,
    config_defaults,
    dataclass_default,
)
from keras_transformer.commands.train import OVERWRITE_HELP


def register(sub) -> None:
    from keras_transformer.commands.train import add_run_arguments

    p = sub.add_parser(
        "pretrain",
        argument_default=argparse.SUPPRESS,  # left out: PretrainConfig's defaults
        help="pre-train an encoder as a masked language model (BERT's 15%% scheme)",
        description="Pre-train an encoder as a masked language model on unlabelled text "
        "(default: generated film reviews), then compare fine-tuning from it with training "
        "from scratch on a small labelled set. An interrupted run is resumed by running the "
        "same command.",
    )
    p.add_argument(
        "--corpus", help="'reviews' (generated offline) or a UTF-8 text file with one text per line"
    )
    p.add_argument("--num-sentences", type=int, help="texts generated for --corpus reviews")
    p.add_argument(
        "--validation-fraction",
        type=FRACTION,
        help="share of the texts held out to choose the best weights, in (0, 1)",
    )
    add_run_arguments(p)
    p.add_argument(
        "--mask-rate", type=FRACTION, help="share of tokens selected for prediction, in (0, 1)"
    )
    p.add_argument(
        "--finetune-task",
        choices=("auto", *SEQUENCE_TASKS, "none"),
        help="then fine-tune on this task from the pre-trained encoder and from scratch "
        "(auto: reviews for the reviews corpus, else none)",
    )
    for name, kind, text in (
        ("epochs", int, "passes over the labelled set"),
        ("batch-size", int, "labelled texts per update"),
        ("learning-rate", POSITIVE, "constant Adam learning rate"),
    ):
        p.add_argument(f"--finetune-{name}", type=kind, help=f"fine-tuning: {text}")
    p.add_argument("--out", help="run directory (default: runs/mlm_<corpus>)")
    p.add_argument("--seed", type=int, help="seed of the corpus, the masks and the initial weights")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help=OVERWRITE_HELP,
    )
    config_defaults(p, _pretrain_default)  # "(default: ...)" read from PretrainConfig
    p.set_defaults(func=_pretrain)


def _pretrain_default(name: str) -> str:
    from keras_transformer.training.pretrain_config import PretrainConfig

    if name in PretrainConfig.SIZES:  # the sizes a pre-training run leaves unset
        return str(PretrainConfig.SIZES[name])
    return dataclass_default(PretrainConfig, name)


def _pretrain(args) -> int:
    from keras_transformer.commands.train import run_command
    from keras_transformer.training.pretraining import PretrainConfig, pretrain

    keys = ("validation_masked_accuracy", "train_seconds", "parameters")
    metrics = run_command(PretrainConfig, pretrain, args, "finetune_task", keys)
    if tuned := metrics.get("fine_tuning"):
        print(
            f"fine-tuning on {tuned['task']} ({tuned['num_train']} labelled texts), test "
            f"accuracy: pre-trained {tuned['pretrained_test_accuracy']:.3f}, from scratch "
            f"{tuned['scratch_test_accuracy']:.3f} (chance {tuned['chance_accuracy']:.3f}); "
            f"the two train runs: {os.path.dirname(tuned['pretrained']['run_dir'])}/"
        )
    return 0
