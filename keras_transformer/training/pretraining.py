"""Masked-language-model pre-training of the encoder, and the fine-tuning it pays for.

`pretrain` (`keras-transformer pretrain`) is `train` on a `PretrainConfig`: the masked-LM recipe
(`recipes.masked_lm`: BERT's corruption, new masks every epoch) then `compare_fine_tuning`; its
run directory feeds `--init-from` (`init_from.load_pretrained`).
"""

from keras_transformer.data.batching.classification import classification_dataset
from keras_transformer.data.tasks.corpus import split_corpus
from keras_transformer.training.fine_tuning import compare_fine_tuning, fine_tune
from keras_transformer.training.init_from import load_pretrained
from keras_transformer.training.pretrain_config import PretrainConfig
from keras_transformer.training.run import train

__all__ = [
    "PretrainConfig",
    "classification_dataset",
    "compare_fine_tuning",
    "fine_tune",
    "load_pretrained",
    "pretrain",
    "split_corpus",
]


def pretrain(config: PretrainConfig, *, started: float | None = None) -> dict:
    """Runs one pre-training job and writes its run directory; returns `metrics.json`.

    The one training path (`train`) with the masked-LM recipe: the same run directory, resume,
    checkpoints and plots as every `train` run."""
    if not isinstance(config, PretrainConfig):
        raise TypeError(f"pretrain takes a PretrainConfig; received {type(config).__name__}.")
    return train(config, started=started)
