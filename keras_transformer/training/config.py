"""What a training run is asked to do: `TrainConfig`, the architectures, precision and XLA."""

from __future__ import annotations

import os
from dataclasses import dataclass

from keras_transformer._validation import check_positive_int, check_rate
from keras_transformer.models.config import TransformerConfig


def model_config(config, **overrides) -> TransformerConfig:
    """The `TransformerConfig` of a run config's size fields (`ValueError` naming a bad one)."""
    if isinstance(config.max_length, int) and config.max_length < 4:
        raise ValueError(
            f"max_length={config.max_length} is too short: it counts [START] and [END]; use >= 4."
        )
    return TransformerConfig.from_dict({**vars(config), **overrides})


STRATEGIES: tuple[str, ...] = ("none", "mirrored", "multiworker", "tpu")
"""The names `make_strategy` (and `keras-transformer train --strategy`) accept."""


def check_strategy_options(name: str, cpu_devices: int | None = None) -> None:
    """`ValueError` unless `name` is in `STRATEGIES` and `cpu_devices` None or >= 1 (mirrored)."""
    if name not in STRATEGIES:
        raise ValueError(
            f"strategy={name!r} is not supported; use one of {', '.join(STRATEGIES)} "
            "(--strategy none trains on one device)."
        )
    if cpu_devices is None:
        return
    if isinstance(cpu_devices, bool) or not isinstance(cpu_devices, int) or cpu_devices < 1:
        raise ValueError(
            f"cpu_devices={cpu_devices!r} must be an integer >= 1 (--cpu-devices 2 "
            "splits the CPU into two logical devices); leave it out to use the GPUs."
        )
    if name != "mirrored":
        raise ValueError(
            f"cpu_devices={cpu_devices} (--cpu-devices) only applies to strategy='mirrored'; "
            f"received strategy={name!r}. Pass --strategy mirrored --cpu-devices "
            f"{cpu_devices}, or drop --cpu-devices."
        )


ARCHITECTURES: tuple[str, ...] = ("encoder-decoder", "encoder", "decoder-only", "dual-encoder")
"""Values of `TrainConfig.architecture` / `--architecture`."""

TOKEN_TASKS: tuple[str, ...] = ("it-referent",)
"""Tasks labelled at one token, trained with `build_token_classifier`."""

SEQUENCE_TASKS: tuple[str, ...] = ("imdb", "reviews")
"""Tasks labelled per sequence, trained with `build_classifier` (encoder only)."""

GENERATED_TASKS: tuple[str, ...] = ("numbers", "copy", "reverse", "sort", "recall")
"""Tasks drawn from a rule: fresh examples, nothing to overfit, trained without dropout."""

TRANSLATION_TASKS: tuple[str, ...] = (*GENERATED_TASKS, "tsv", "ted_hrlr_pt_en")
"""Pair tasks a decoder-only model learns as "source [SEP] target"."""

DATA_SIZED_TASKS: tuple[str, ...] = ("tsv",)
"""Tasks whose sizes left unset are chosen from the corpus (`data.sizing.plan_training`)."""

FIXED_SIZES: dict[str, int] = dict(epochs=12, max_length=48, vocab_size=2000) | {
    n: getattr(TransformerConfig(), n) for n in ("num_layers", "d_model", "num_heads", "dff")
}
"""Sizes of the other tasks' unset flags; the model's are `TransformerConfig`'s defaults."""

BUDGET_EPOCHS = 1000
"""The epoch cap of a `--time-budget` run: the budget, not the epochs, ends it."""


def check_architecture(architecture: str, task: str) -> None:
    """Raises `ValueError` unless `architecture` can train on `task`.

    Example:
    >>> check_architecture("decoder-only", "numbers")
    >>> check_architecture("encoder", "numbers")
    Traceback (most recent call last):
    ...
    ValueError: architecture='encoder' cannot train task='numbers': an encoder alone does not generate text; use --architecture encoder-decoder or decoder-only, or an encoder task: ['it-referent', 'imdb', 'reviews']
    """
    if architecture not in ARCHITECTURES:
        raise ValueError(
            f"architecture={architecture!r} is not known; choose one of {list(ARCHITECTURES)}."
        )
    if architecture == "encoder" and task not in TOKEN_TASKS + SEQUENCE_TASKS:
        raise ValueError(
            f"architecture='encoder' cannot train task={task!r}: an encoder alone does not "
            "generate text; use --architecture encoder-decoder or decoder-only, or an encoder "
            f"task: {list(TOKEN_TASKS + SEQUENCE_TASKS)}"
        )
    if architecture == "encoder-decoder" and task in TOKEN_TASKS + SEQUENCE_TASKS:
        raise ValueError(
            f"task={task!r} is a classification task; train it with --architecture encoder"
            + (" or decoder-only." if task in TOKEN_TASKS else ".")
        )
    if architecture == "dual-encoder" and task not in TRANSLATION_TASKS:
        raise ValueError(
            f"architecture='dual-encoder' learns sentence vectors from pairs that mean the "
            f"same; task={task!r} is not a pair task. Use one of {list(TRANSLATION_TASKS)}."
        )
    if architecture == "decoder-only" and task in SEQUENCE_TASKS:
        raise ValueError(
            f"task={task!r} is a sequence-classification task; train it with --architecture "
            "encoder."
        )


PRECISIONS = {None: "float32", "none": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
"""Keras dtype policies of `--mixed-precision`; `"auto"` resolves to one of them."""


@dataclass
class TrainConfig:
    """Settings of a training run; the defaults train the README's main job."""

    task: str = "numbers"
    source_lang: str = "en"
    target_lang: str = "de"
    data: str | None = None
    num_train: int | None = None
    num_validation: int | None = None
    num_test: int | None = None
    # None: `FIXED_SIZES`, or on --task tsv sized from the data (`data.sizing.plan_training`).
    epochs: int | None = None
    batch_size: int = 64
    max_length: int | None = None
    num_layers: int | None = None
    d_model: int | None = None
    num_heads: int | None = None
    dff: int | None = None
    dropout: float | None = None  # 0 on generated tasks (nothing to overfit), else 0.1
    vocab_size: int | None = None
    warmup_steps: int | None = None  # None: 8 % of the planned updates (budget.planned_schedule)
    time_budget: float | None = None  # seconds of training (--time-budget 10m)
    label_smoothing: float = 0.1
    early_stopping_patience: int = 4
    out: str | None = None
    seed: int = 0
    jit_compile: str = "auto"
    mixed_precision: str | None = "auto"
    overwrite: bool = False
    strategy: str = "none"
    cpu_devices: int | None = None
    architecture: str = "encoder-decoder"
    learning_rate: float | None = None
    init_from: str | None = None
    freeze_embeddings: bool = False
    skip_malformed: bool = False

    def __post_init__(self):
        if self.time_budget is not None:
            from keras_transformer.training.budget import parse_duration

            self.time_budget = parse_duration(self.time_budget)
        if self.epochs is None and self.time_budget is not None:
            self.epochs = BUDGET_EPOCHS  # the budget ends the run
        for name, value in FIXED_SIZES.items():
            if getattr(self, name) is None and self.task not in DATA_SIZED_TASKS:
                setattr(self, name, value)
        if self.dropout is None:
            # fresh examples of a rule: nothing to overfit (docs/performance.md)
            self.dropout = 0.0 if self.task in GENERATED_TASKS else 0.1
        if self.warmup_steps is None and not self.planned_schedule:
            self.warmup_steps = 1000  # the paper's schedule (--learning-rate given: unused)
        check_strategy_options(self.strategy, self.cpu_devices)
        check_architecture(self.architecture, self.task)
        if self.jit_compile not in ("auto", "on", "off"):
            raise ValueError(
                f"jit_compile must be 'auto', 'on' or 'off'; received {self.jit_compile!r}."
            )
        if self.mixed_precision not in (*PRECISIONS, "auto"):
            raise ValueError(
                f"mixed_precision must be one of 'auto', 'bf16', 'fp16' or None; "
                f"received {self.mixed_precision!r}."
            )
        for name in ("epochs", "batch_size", "max_length", "vocab_size", "warmup_steps"):
            value = getattr(self, name)
            if value is None and (name in FIXED_SIZES or name == "warmup_steps"):
                continue  # --task tsv / --time-budget: resolved by train from the data
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer; received {name}={value!r}.")
        rate = self.learning_rate
        if rate is not None and not (isinstance(rate, (int, float)) and rate > 0):
            raise ValueError(
                f"learning_rate must be > 0 (or None for the warm-up schedule); received "
                f"learning_rate={self.learning_rate!r}."
            )
        if self.init_from is not None and (
            self.architecture != "encoder" or self.task not in SEQUENCE_TASKS
        ):
            raise ValueError(
                "--init-from RUN_DIR fine-tunes a pre-trained encoder on a sequence "
                "classification task: use it with --architecture encoder and --task reviews "
                f"or imdb (received --architecture {self.architecture} --task {self.task})."
            )
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(
                f"label_smoothing must be in [0, 1); received label_smoothing={self.label_smoothing}."
            )
        if self.architecture != "encoder-decoder" and (
            self.strategy != "none" or self.mixed_precision not in (None, "auto")
        ):
            raise ValueError(
                f"--architecture {self.architecture} runs on one device in float32; drop "
                f"--strategy {self.strategy} / --mixed-precision {self.mixed_precision}."
            )
        if not self.sized_by_data:
            model_config(self)  # the sizes are checked before minutes of data work

    @property
    def planned_schedule(self) -> bool:
        """Whether the rate is a `BudgetSchedule` (tsv, generated tasks, --time-budget)."""
        return self.learning_rate is None and (
            self.task in DATA_SIZED_TASKS + GENERATED_TASKS or self.time_budget is not None
        )

    @property
    def sized_by_data(self) -> bool:
        """Whether some size is left to `apply_plan` (--task tsv without every size flag)."""
        return any(getattr(self, name) is None for name in FIXED_SIZES)

    def apply_plan(self, plan) -> dict:
        """Fills the sizes left `None` from a `data.sizing.TrainingPlan`; returns those filled."""
        chosen = {name: getattr(plan, name) for name in FIXED_SIZES if getattr(self, name) is None}
        for name, value in chosen.items():
            setattr(self, name, value)
        model_config(self)
        return chosen

    @property
    def model(self) -> TransformerConfig:
        """The model sizes of this run (`max_length` is that of one side)."""
        return model_config(self)

    @property
    def run_dir(self) -> str:
        if self.out:
            return self.out
        name = self.task
        if self.task == "numbers":
            name += f"_{self.source_lang}_{self.target_lang}"
        if self.architecture != "encoder-decoder":
            name = f"{name}_{self.architecture}"
        return os.path.join("runs", name)

    def task_options(self) -> dict:
        """The loader options this config sets; `ValueError` if the task lacks one (`--data`)."""
        from keras_transformer.data import task_options  # TensorFlow: not needed for --help

        accepted = task_options(self.task)
        options = {"seed": self.seed} if "seed" in accepted else {}
        if self.task == "numbers":
            options.update(source_lang=self.source_lang, target_lang=self.target_lang)
        if self.task == "tsv":
            if not self.data:
                raise ValueError("task 'tsv' needs --data PATH to a tab-separated file.")
            options.update(path=self.data, on_error="skip" if self.skip_malformed else "raise")
        elif self.data:
            raise ValueError(f"--data is only read by --task tsv; task {self.task!r} ignores it.")
        for name in ("num_train", "num_validation", "num_test"):
            if getattr(self, name) is not None:
                if name not in accepted:
                    raise ValueError(
                        f"task {self.task!r} has no option {name}; drop --{name.replace('_', '-')}."
                    )
                options[name] = getattr(self, name)
        return options


def resolve_precision(setting: str | None) -> str | None:
    """`"auto"` -> `"bf16"` on GPUs of compute capability >= 8.0, `"fp16"` >= 7.0, else None.

    Example:
    >>> resolve_precision("fp16"), resolve_precision("none")
    ('fp16', None)
    """
    if setting != "auto":
        return None if setting == "none" else setting
    import tensorflow as tf

    capabilities = [
        tf.config.experimental.get_device_details(gpu).get("compute_capability", (0, 0))
        for gpu in tf.config.list_physical_devices("GPU")
    ]
    lowest = min(capabilities, default=(0, 0))
    return "bf16" if lowest >= (8, 0) else "fp16" if lowest >= (7, 0) else None


def use_xla(setting: str) -> bool:
    """`auto`: XLA on when a GPU is present (it slows small models on CPU)."""
    if setting == "auto":
        import tensorflow as tf

        return bool(tf.config.list_physical_devices("GPU"))
    return setting == "on"


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
        if not 0.0 < self.mask_rate < 1.0:
            raise ValueError(f"mask_rate must be in (0, 1); received mask_rate={self.mask_rate}.")
        check_rate("validation_fraction", self.validation_fraction)
        if self.validation_fraction == 0.0:
            raise ValueError(
                "validation_fraction must be > 0: the best weights are chosen on held-out texts."
            )
        if not self.finetune_learning_rate > 0:
            raise ValueError(
                "finetune_learning_rate must be > 0; received "
                f"finetune_learning_rate={self.finetune_learning_rate}."
            )
        if self.finetune_task == "auto":
            self.finetune_task = "reviews" if self.corpus == "reviews" else None
        if self.finetune_task not in (None, "reviews", "imdb"):
            raise ValueError(
                f"finetune_task={self.finetune_task!r}: fine-tuning compares on a sequence "
                "classification task, 'reviews' or 'imdb' (or none)."
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
