"""What a pre-training run is asked to do: `PretrainConfig`."""

from __future__ import annotations

import os
from dataclasses import dataclass

from keras_transformer._validation import check_number, check_positive_int
from keras_transformer.choices import SEQUENCE_TASKS
from keras_transformer.models.config import TransformerConfig
from keras_transformer.training.config import model_config

OBJECTIVE = "masked-lm"
"""`config.json["objective"]` of a pre-training run directory."""


@dataclass
class PretrainConfig:
    """Settings of a pre-training run; the defaults pre-train on the generated reviews."""

    corpus: str = "reviews"
    num_sentences: int = 10_000
    validation_fraction: float = 0.05
    epochs: int = 24
    batch_size: int = 64
    max_length: int = 32
    num_layers: int = 2
    d_model: int = 64
    num_heads: int = 4
    dff: int = 128
    dropout: float = 0.1
    vocab_size: int = 2000
    warmup_steps: int = 400
    mask_rate: float = 0.15
    early_stopping_patience: int = 4
    finetune_task: str | None = "auto"
    finetune_epochs: int = 30
    finetune_batch_size: int = 32
    finetune_learning_rate: float = 1e-3
    out: str | None = None
    seed: int = 0
    overwrite: bool = False
    label_smoothing: float = 0.0

    def __post_init__(self):
        positive = ("num_sentences", "epochs", "batch_size", "vocab_size", "warmup_steps")
        for name in (*positive, "finetune_epochs", "finetune_batch_size"):
            check_positive_int(name, getattr(self, name))
        check_number("mask_rate", self.mask_rate, 0.0, 1.0, open_minimum=True)
        hint = " The best weights are chosen on held-out texts."
        check_number(
            "validation_fraction", self.validation_fraction, 0.0, 1.0, open_minimum=True, hint=hint
        )
        check_number("finetune_learning_rate", self.finetune_learning_rate, 0.0, open_minimum=True)
        if self.finetune_task == "auto":
            self.finetune_task = "reviews" if self.corpus == "reviews" else None
        if self.finetune_task not in (None, *SEQUENCE_TASKS):
            raise ValueError(
                f"finetune_task={self.finetune_task!r}: fine-tuning compares on a sequence "
                f"classification task, one of {SEQUENCE_TASKS} (or none)."
            )
        model_config(self)  # the sizes are checked before any data work

    @property
    def run_dir(self) -> str:
        if self.out:
            return self.out
        from keras_transformer.data.tasks.corpus import GENERATED_CORPORA

        name = self.corpus if self.corpus in GENERATED_CORPORA else "corpus"
        return os.path.join("runs", f"mlm_{name}")

    @property
    def model(self) -> TransformerConfig:
        """The encoder sizes of this run (a fine-tuned classifier takes them too)."""
        return model_config(self)
