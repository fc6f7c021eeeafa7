"""Fine-tuning a pre-trained encoder as a classifier: the model of the `sequence` recipe, and
the comparison a pre-training run ends with (`compare_fine_tuning`): two `train` runs that differ
only in their start."""

import os

import keras

from keras_transformer import models
from keras_transformer._validation import check_choice
from keras_transformer.models.config import TransformerConfig
from keras_transformer.runs import RunDirectory
from keras_transformer.training.config import TrainConfig

__all__ = ["STARTS", "build_fine_tuned_classifier", "compare_fine_tuning", "fine_tuning_config"]

STARTS = ("pretrained", "scratch")
"""The two starts of the comparison: the pre-trained encoder's weights, or new random weights
(`--fresh-weights`) with the same vocabulary and sizes."""


def build_fine_tuned_classifier(
    vocab_size: int,
    num_classes: int,
    sizes: TransformerConfig,
    *,
    pretrained: keras.Model | None = None,
    freeze_embeddings: bool = True,
    pooling: str = "cls",
) -> tuple[keras.Model, list[str]]:
    """A `build_classifier` whose encoder starts from `pretrained` (when given); returns the
    model and the names of the layers copied (`models.transfer_weights`).

    Frozen embeddings keep words seen only in pre-training near similar ones (`reviews`: frozen
    0.94/0.78/0.82 vs 0.91/0.54/0.77): small labelled sets move them."""
    model = models.build_classifier(vocab_size, num_classes, pooling=pooling, config=sizes)
    transferred = models.transfer_weights(pretrained, model) if pretrained is not None else []
    if freeze_embeddings:
        model.get_layer("encoder_embedding").trainable = False
    return model, transferred


def fine_tuning_config(
    run_dir: str,
    start: str,
    task: str = "reviews",
    *,
    epochs: int = 30,
    batch_size: int = 32,
    learning_rate: float = 1e-3,
    seed: int = 0,
    dropout: float | None = None,
    jit_compile: str = "auto",
    out: str | None = None,
) -> TrainConfig:
    """The `train` run that fine-tunes the pre-training run `run_dir` on `task` from `start`.

    It is `keras-transformer train --task TASK --architecture encoder --init-from RUN_DIR
    --freeze-embeddings` (and `--fresh-weights` from scratch) with the recipe given here: both
    starts read the same vocabulary and sizes, and keep the token embeddings fixed (else the few
    labelled texts move the embeddings of the words they show and leave the others behind).

    Args:
        run_dir: a finished `pretrain` run directory.
        start: one of `STARTS`.
        task: a sequence-classification task (`reviews`, `imdb`).
        epochs, batch_size, learning_rate, seed: the fine-tuning recipe (a constant rate).
        dropout: the classifier's dropout (None: `train`'s default for the task).
        jit_compile: as `train --jit-compile`.
        out: the run directory (default: `RUN_DIR/fine_tuning/<start>`).
    """
    check_choice("start", start, STARTS)
    return TrainConfig(
        task=task,
        architecture="encoder",
        init_from=str(run_dir),
        fresh_weights=start == "scratch",
        freeze_embeddings=True,
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
        seed=seed,
        dropout=dropout,
        jit_compile=jit_compile,
        out=out or os.path.join(str(run_dir), "fine_tuning", start),
    )


def compare_fine_tuning(run_dir: str, task: str = "reviews", **recipe) -> dict:
    """Fine-tunes the pre-training run `run_dir` on `task` from each of `STARTS`: two `train`
    runs (`fine_tuning_config(run_dir, start, task, **recipe)`), each resumed where it stopped
    and skipped once finished with the same settings.

    Returns:
        `{"task", "num_train", "num_test", "<start>_test_accuracy", "chance_accuracy", <start>}`,
        each `<start>` that run's `metrics.json` and its `run_dir`.
    """
    from keras_transformer.training.run import train  # the one training path

    runs = {}
    for start in STARTS:
        config = fine_tuning_config(run_dir, start, task, **recipe)
        finished = RunDirectory(config.run_dir).finished_metrics(config)
        runs[start] = {**(finished or train(config)), "run_dir": config.run_dir}
    pretrained = runs["pretrained"]
    return {
        "task": task,
        "num_train": pretrained["num_train"],
        "num_test": pretrained["num_test"],
        **{f"{start}_test_accuracy": runs[start]["test_accuracy"] for start in STARTS},
        "chance_accuracy": pretrained["chance_accuracy"],
        **runs,
    }
