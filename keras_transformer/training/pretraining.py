"""Masked-language-model pre-training of the encoder, and the fine-tuning it pays for.

`pretrain` (`keras-transformer pretrain`) is three `train` runs: the masked-LM run on a
`PretrainConfig` (`recipes.masked_lm`: BERT's corruption, new masks every epoch) in `RUN`, then,
with a `finetune_task`, the same classifier fine-tuned from its encoder and from scratch
(`compare_fine_tuning`) in `RUN/fine_tuning/pretrained` and `RUN/fine_tuning/scratch`. A
pre-training run directory feeds `train --init-from` (`init_from.load_pretrained`).
"""

from keras_transformer.data.batching.classification import classification_dataset
from keras_transformer.data.tasks.corpus import split_corpus
from keras_transformer.runs import RunDirectory
from keras_transformer.training.fine_tuning import compare_fine_tuning, fine_tuning_config
from keras_transformer.training.init_from import load_pretrained
from keras_transformer.training.pretrain_config import PretrainConfig
from keras_transformer.training.run import train
from keras_transformer.training.rundir import progress_logger

__all__ = [
    "PretrainConfig",
    "classification_dataset",
    "compare_fine_tuning",
    "fine_tuning_config",
    "load_pretrained",
    "pretrain",
    "split_corpus",
]


def pretrain(config: PretrainConfig, *, started: float | None = None) -> dict:
    """Runs one pre-training job and writes its run directory; returns `metrics.json`.

    The masked-LM run is `train` with the masked-LM recipe: the same run directory, resume,
    checkpoints and plots as every `train` run. With `config.finetune_task`, the comparison
    follows (`compare_fine_tuning`) and is added to `metrics.json` under `"fine_tuning"`. Until
    then the job is unfinished: the same command (with or without `--overwrite`) skips the
    finished pre-training and resumes the fine-tuning."""
    if not isinstance(config, PretrainConfig):
        raise TypeError(f"pretrain takes a PretrainConfig; received {type(config).__name__}.")
    run = RunDirectory(config.run_dir)
    metrics = run.finished_metrics(config) if config.finetune_task is not None else None
    if metrics is None or "fine_tuning" in metrics:
        metrics = train(config, started=started)  # refuses a finished job without --overwrite
    else:
        progress_logger.info("the pre-training in %s is done; fine-tuning follows", run.path)
    if config.finetune_task is None:
        return metrics
    progress_logger.info(
        "fine-tuning on %s from the pre-trained encoder, then from scratch",
        config.finetune_task,
    )
    metrics["fine_tuning"] = compare_fine_tuning(
        config.run_dir,
        config.finetune_task,
        epochs=config.finetune_epochs,
        batch_size=config.finetune_batch_size,
        learning_rate=config.finetune_learning_rate,
        seed=config.seed,
        dropout=config.dropout,
        jit_compile=config.jit_compile,
    )
    run.write_json("metrics.json", metrics)
    return metrics
