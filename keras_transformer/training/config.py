"""What a training run is asked to do: `TrainConfig`, and which architecture trains which task."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from keras_transformer._validation import (
    check_choice,
    check_divisible,
    check_int,
    check_max_length,
    check_number,
    check_rate,
    parse_duration,
)
from keras_transformer.choices import (
    ARCHITECTURES,
    DATA_SIZED_TASKS,
    GENERATED_TASKS,
    JIT_COMPILE,
    PRECISIONS,
    SEQUENCE_TASKS,
    TOKEN_TASKS,
    TRANSLATING_ARCHITECTURES,
    TRANSLATION_TASKS,
)
from keras_transformer.errors import UserInputError
from keras_transformer.models.config import TransformerConfig


def model_config(config, **overrides) -> TransformerConfig:
    """The `TransformerConfig` of a run config's size fields (`ValueError` naming a bad one)."""
    if config.max_length is not None:
        check_max_length(config.max_length)
    sizes = {**vars(config), **overrides}
    d_model, num_heads = sizes.get("d_model"), sizes.get("num_heads")
    if isinstance(d_model, int) and isinstance(num_heads, int) and 0 < num_heads <= d_model:
        check_divisible(d_model, num_heads, flags=True)
    return TransformerConfig.from_dict(sizes)


FIXED_SIZES: dict[str, int] = dict(epochs=12, max_length=48, vocab_size=2000) | {
    n: getattr(TransformerConfig(), n) for n in ("num_layers", "d_model", "num_heads", "dff")
}
"""Sizes of the other tasks' unset flags; the model's are `TransformerConfig`'s defaults."""

INIT_FROM_SIZES: tuple[str, ...] = (
    "num_layers",
    "d_model",
    "num_heads",
    "dff",
    "max_length",
    "vocab_size",
)
"""Sizes a translation run started `--init-from` another takes from it (given ones must match)."""

DEFAULT_DROPOUT = 0.1
"""Dropout where neither `--dropout` nor a rung's measured value (`planning.RUNG_DROPOUT`, on
a task sized from its data) says otherwise: the paper's P_drop. The generated tasks train
without (fresh examples: nothing to overfit)."""

BUDGET_EPOCHS = 1000
"""The epoch cap of a `--time-budget` run: the budget, not the epochs, ends it."""


def check_architecture(architecture: str, task: str) -> None:
    """Raises `ValueError` unless `architecture` can train on `task`.

    Example:
    >>> check_architecture("decoder-only", "numbers")
    >>> check_architecture("encoder", "numbers")
    Traceback (most recent call last):
    ...
    keras_transformer.errors.UserInputError: architecture='encoder' cannot train task='numbers': an encoder alone does not generate text; use --architecture encoder-decoder or decoder-only, or an encoder task: ['it-referent', 'imdb', 'reviews']
    """
    if architecture not in ARCHITECTURES:
        raise UserInputError(
            f"architecture={architecture!r} is not known; choose one of {list(ARCHITECTURES)}."
        )
    if architecture == "encoder" and task not in TOKEN_TASKS + SEQUENCE_TASKS:
        raise UserInputError(
            f"architecture='encoder' cannot train task={task!r}: an encoder alone does not "
            "generate text; use --architecture encoder-decoder or decoder-only, or an encoder "
            f"task: {list(TOKEN_TASKS + SEQUENCE_TASKS)}"
        )
    if architecture == "encoder-decoder" and task in TOKEN_TASKS + SEQUENCE_TASKS:
        raise UserInputError(
            f"task={task!r} is a classification task; train it with --architecture encoder"
            + (" or decoder-only." if task in TOKEN_TASKS else ".")
        )
    if architecture == "dual-encoder" and task not in TRANSLATION_TASKS:
        raise UserInputError(
            f"architecture='dual-encoder' learns sentence vectors from pairs that mean the "
            f"same; task={task!r} is not a pair task. Use one of {list(TRANSLATION_TASKS)}."
        )
    if architecture == "decoder-only" and task in SEQUENCE_TASKS:
        raise UserInputError(
            f"task={task!r} is a sequence-classification task; train it with --architecture "
            "encoder."
        )


@dataclass(frozen=True)
class TrainConfig:
    """Settings of a training run; the defaults train the README's main job.

    Made once and never changed (frozen): `__post_init__` fills the unset fields that do not wait
    for the data, checks every setting, and fixes what follows from them alone: `run_dir`,
    `planned_schedule` and `settings` (what `config.json` records). What the run decides from
    the data and the devices is its `plan.RunPlan`.
    """

    task: str = "numbers"
    source_lang: str = "en"
    target_lang: str = "de"
    data: str | None = None
    num_train: int | None = None
    num_validation: int | None = None
    num_test: int | None = None
    # None: `FIXED_SIZES`, or on --task tsv sized from the data (`training.planning`).
    epochs: int | None = None
    batch_size: int = 64
    max_length: int | None = None
    num_layers: int | None = None
    d_model: int | None = None
    num_heads: int | None = None
    dff: int | None = None
    dropout: float | None = None  # 0 on generated tasks (nothing to overfit), else 0.1
    vocab_size: int | None = None
    warmup_steps: int | None = None  # None: 8 % of the planned updates (planning.plan_schedule)
    time_budget: float | None = None  # seconds of training (--time-budget 10m)
    label_smoothing: float = 0.1
    # Epochs without a lower val_loss before stopping; None: 4, and no early stopping under a
    # time budget, whose schedule decays to the budget's end (a flat loss is not a flat BLEU).
    early_stopping_patience: int | None = None
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
    fresh_weights: bool = False  # with init_from: its vocabulary and sizes, new random weights
    freeze_embeddings: bool = False
    skip_malformed: bool = False
    columns: str | None = None  # --task tsv / spa_eng: 1-based source,target columns ("2,1")
    validation_data: str | None = None  # a validation file instead of a split of --data
    test_data: str | None = None  # a test file instead of a split of --data

    def __post_init__(self):
        """Fills the unset fields (`_fill_unset`), then checks every setting once: those every
        run shares here, those of its kind of run in `_check_run`; last, fixes `run_dir`,
        `planned_schedule` and `settings`. The config is frozen: only here, while it is made,
        are fields set (`object.__setattr__`)."""
        if self.time_budget is not None:
            object.__setattr__(self, "time_budget", parse_duration(self.time_budget))
        object.__setattr__(self, "planned_schedule", self._plans_schedule())
        self._fill_unset()
        from keras_transformer.training.devices import check_strategy_options  # TensorFlow

        check_strategy_options(self.strategy, self.cpu_devices)
        check_choice("jit_compile", self.jit_compile, JIT_COMPILE)
        check_choice("mixed_precision", self.mixed_precision, (*PRECISIONS, "auto"))
        for name in ("epochs", "batch_size", "max_length", "vocab_size", "warmup_steps"):
            value = getattr(self, name)
            if value is None and (name in FIXED_SIZES or name == "warmup_steps"):
                continue  # --task tsv / --time-budget: resolved by train from the data
            check_int(name, value)
        if self.learning_rate is not None:
            hint = " Leave it None for the warm-up schedule."
            check_number("learning_rate", self.learning_rate, 0.0, open_minimum=True, hint=hint)
        check_rate("label_smoothing", self.label_smoothing)
        self._check_run()
        object.__setattr__(self, "run_dir", self._named_run_dir())
        object.__setattr__(self, "settings", self._recorded())  # read, never changed

    def _fill_unset(self) -> None:
        """The defaults of the fields left None that do not wait for the data."""
        if self.epochs is None and self.time_budget is not None:
            object.__setattr__(self, "epochs", BUDGET_EPOCHS)  # the budget ends the run
        for name, value in FIXED_SIZES.items():
            if getattr(self, name) is not None or self.task in DATA_SIZED_TASKS:
                continue
            if not (self.continues and name in INIT_FROM_SIZES):  # else: the run's (init_from.py)
                object.__setattr__(self, name, value)
        if self.early_stopping_patience is None and self.time_budget is None:
            object.__setattr__(self, "early_stopping_patience", 4)
        if self.dropout is None and self.task not in DATA_SIZED_TASKS:  # else: planning's
            # fresh examples of a rule: nothing to overfit (docs/performance.md)
            object.__setattr__(
                self, "dropout", 0.0 if self.task in GENERATED_TASKS else DEFAULT_DROPOUT
            )
        if self.warmup_steps is None and not self.planned_schedule:
            # the paper's schedule (with --learning-rate given, unused)
            object.__setattr__(self, "warmup_steps", 1000)

    def _check_run(self) -> None:
        """The checks of a run that trains `task` with `architecture`."""
        check_architecture(self.architecture, self.task)
        fine_tunes = self.architecture == "encoder" and self.task in SEQUENCE_TASKS
        if self.init_from is not None and not (fine_tunes or self.continues):
            raise UserInputError(
                "--init-from RUN_DIR continues a translation run (--architecture "
                "encoder-decoder or decoder-only) or fine-tunes a pre-trained encoder "
                "(--architecture encoder --task reviews or imdb); received --architecture "
                f"{self.architecture} --task {self.task}."
            )
        if self.fresh_weights and self.init_from is None:
            raise UserInputError(
                "--fresh-weights takes the vocabulary and sizes of --init-from RUN_DIR with new "
                "random weights; give --init-from, or drop --fresh-weights."
            )
        if self.columns is not None:  # "2,2" fails here, before minutes of data work
            from keras_transformer.data.tasks.tsv import parse_columns

            parse_columns(self.columns)
        if self.architecture != "encoder-decoder" and (
            self.strategy != "none" or self.mixed_precision not in (None, "auto")
        ):
            raise UserInputError(
                f"--architecture {self.architecture} runs on one device in float32; drop "
                f"--strategy {self.strategy} / --mixed-precision {self.mixed_precision}."
            )
        if not self.sized_by_data:  # the sizes are checked before minutes of data work; an
            # unset dropout (a data-sized task) is chosen with them (planning.default_dropout)
            model_config(self, dropout=DEFAULT_DROPOUT if self.dropout is None else self.dropout)
        elif isinstance(self.d_model, int) and isinstance(self.num_heads, int):
            if 0 < self.num_heads <= self.d_model:
                # both given, the rest from the data
                check_divisible(self.d_model, self.num_heads, flags=True)

    @property
    def continues(self) -> bool:
        """Whether `init_from` names a translation run this one continues (its sizes)."""
        return (
            self.init_from is not None
            and self.architecture in TRANSLATING_ARCHITECTURES
            and self.task in TRANSLATION_TASKS
        )

    def _recorded(self) -> dict:
        """`settings`: the fields `config.json` records and a resumed run must match
        (`runs.RunDirectory`)."""
        return dataclasses.asdict(self)

    def _plans_schedule(self) -> bool:
        """`planned_schedule`: whether the rate is a `BudgetSchedule` (tsv, generated tasks,
        --time-budget)."""
        return self.learning_rate is None and (
            self.task in DATA_SIZED_TASKS + GENERATED_TASKS or self.time_budget is not None
        )

    @property
    def sized_by_data(self) -> bool:
        """Whether some size is left to a `planning.TrainingPlan` (--task tsv without every
        size flag)."""
        return any(getattr(self, name) is None for name in FIXED_SIZES)

    @property
    def model(self) -> TransformerConfig:
        """The model sizes of this run (`max_length` is that of one side)."""
        return model_config(self)

    def _named_run_dir(self) -> str:
        """`run_dir`: `out`, else `runs/<task>[_<source>_<target>][_<architecture>]`."""
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
                raise UserInputError("task 'tsv' needs --data PATH to a tab-separated file.")
            options.update(
                path=self.data, validation_path=self.validation_data, test_path=self.test_data
            )
        else:
            for flag, value in (
                ("data", self.data),
                ("validation_data", self.validation_data),
                ("test_data", self.test_data),
            ):
                if value:
                    flag = flag.replace("_", "-")
                    raise UserInputError(
                        f"--{flag} is only read by --task tsv; task {self.task!r} ignores it."
                    )
        if "on_error" in accepted:
            options["on_error"] = "skip" if self.skip_malformed else "raise"
        if self.columns is not None:
            if "columns" not in accepted:
                raise UserInputError(
                    f"--columns is read by --task tsv and spa_eng; task {self.task!r} ignores it."
                )
            options["columns"] = self.columns
        for name in ("num_train", "num_validation", "num_test"):
            if getattr(self, name) is not None:
                if name not in accepted:
                    raise UserInputError(
                        f"task {self.task!r} has no option {name}; drop --{name.replace('_', '-')}."
                    )
                options[name] = getattr(self, name)
        return options
