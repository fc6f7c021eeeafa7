"""What a pre-training run is asked to do: `PretrainConfig`, a `TrainConfig` with a corpus."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from keras_transformer._validation import check_number, check_positive_int
from keras_transformer.choices import SEQUENCE_TASKS
from keras_transformer.errors import UserInputError
from keras_transformer.training.config import TrainConfig, model_config

OBJECTIVE = "masked-lm"
"""`config.json["objective"]` of a pre-training run directory."""


@dataclass(frozen=True)
class PretrainConfig(TrainConfig):
    """Settings of a pre-training run; the defaults pre-train on the generated reviews.

    A `TrainConfig` (its sizes, recipe and run fields; the unset sizes are `SIZES`, a small
    encoder) that `train` runs with the masked-LM recipe, plus the corpus, the masking and the
    fine-tuning comparison below. The translation fields (`task`, `strategy`, `time_budget`, ...)
    are not used and not written to `config.json` (`settings`)."""

    SIZES: ClassVar[dict[str, Any]] = dict(
        epochs=24,
        max_length=32,
        num_layers=2,
        d_model=64,
        num_heads=4,
        dff=128,
        dropout=0.1,
        vocab_size=2000,
        warmup_steps=400,
    )
    """The sizes of a run that leaves them unset."""

    SETTINGS: ClassVar[tuple[str, ...]] = (
        "corpus",
        "num_sentences",
        "validation_fraction",
        *SIZES,
        "batch_size",
        "mask_rate",
        "early_stopping_patience",
        "finetune_task",
        "finetune_epochs",
        "finetune_batch_size",
        "finetune_learning_rate",
        "out",
        "seed",
        "overwrite",
        "label_smoothing",
        "architecture",
    )
    """The fields of `config.json` and of the settings a resumed run must match."""

    architecture: str = "encoder"  # what is pre-trained (and what a fine-tuned classifier takes)
    label_smoothing: float = 0.0
    mixed_precision: str | None = None  # float32, as pre-training always ran
    corpus: str = "reviews"
    num_sentences: int = 10_000
    validation_fraction: float = 0.05
    mask_rate: float = 0.15
    finetune_task: str | None = "auto"
    finetune_epochs: int = 30
    finetune_batch_size: int = 32
    finetune_learning_rate: float = 1e-3

    def _fill_unset(self) -> None:
        """The unset sizes are `SIZES` (no early stopping unless asked for); the fine-tuning
        task `auto` is `reviews` on the reviews corpus, else none."""
        for name, value in self.SIZES.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        if self.finetune_task == "auto":
            object.__setattr__(
                self, "finetune_task", "reviews" if self.corpus == "reviews" else None
            )

    def _check_run(self) -> None:
        """The sizes, before any data work (the task and architecture fields are not read),
        then the corpus's, the masking's and the fine-tuning's settings; `TrainConfig`'s
        `__post_init__` has checked precision, XLA, label smoothing and the time budget."""
        model_config(self)
        positive = ("num_sentences", "epochs", "batch_size", "vocab_size", "warmup_steps")
        for name in (*positive, "finetune_epochs", "finetune_batch_size"):
            check_positive_int(name, getattr(self, name))
        check_number("mask_rate", self.mask_rate, 0.0, 1.0, open_minimum=True)
        hint = " The best weights are chosen on held-out texts."
        check_number(
            "validation_fraction", self.validation_fraction, 0.0, 1.0, open_minimum=True, hint=hint
        )
        check_number("finetune_learning_rate", self.finetune_learning_rate, 0.0, open_minimum=True)
        if self.finetune_task not in (None, *SEQUENCE_TASKS):
            raise UserInputError(
                f"finetune_task={self.finetune_task!r}: fine-tuning compares on a sequence "
                f"classification task, one of {SEQUENCE_TASKS} (or none)."
            )

    def _recorded(self) -> dict[str, Any]:
        """`settings`: the fields of a pre-training run (`SETTINGS`), as `config.json` records
        them."""
        fields = asdict(self)
        return {name: fields[name] for name in self.SETTINGS}

    def _plans_schedule(self) -> bool:
        """Never: pre-training warms up over `warmup_steps` on the paper's schedule."""
        return False

    def _named_run_dir(self) -> str:
        if self.out:
            return self.out
        from keras_transformer.data.tasks.corpus import GENERATED_CORPORA

        name = self.corpus if self.corpus in GENERATED_CORPORA else "corpus"
        return os.path.join("runs", f"mlm_{name}")
