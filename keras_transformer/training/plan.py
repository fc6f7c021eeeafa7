"""A run decided once: `resolve_plan` turns the settings, the corpus and the devices into one
frozen `RunPlan`, which the recipe, compile, fit, the evaluation and the plots read.

The order is the order of what each decision needs:

1. sizes (`resolve_sizes`: the settings, the run `--init-from` continues, the corpus);
2. vocabularies (the recipe's `vocabularies`, of the planned size);
3. `max_length` (`fit_length`: the tokenized training and validation pairs, never the test
   pairs) and the vocabulary size learnt;
4. the model's sizes (a fine-tuned encoder's are its pre-training run's);
5. padding (`pad_to_bucket`: XLA, from `devices`, or a TPU) and the batches (the recipe's
   `batches`, whose count sets the steps of an epoch);
6. the learning rate, in one place: `--learning-rate`, else the recipe's constant rate, else a
   `BudgetSchedule` planned for the steps (a budget's: for what is left of it after setup and
   evaluation), else the paper's `TransformerSchedule`;
7. the budget's split: the test pairs translated under a budget, an epoch's planned seconds.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any, NamedTuple

from keras_transformer.models.config import TransformerConfig
from keras_transformer.training import planning
from keras_transformer.training.config import BUDGET_EPOCHS
from keras_transformer.training.datasets import report_truncated, token_lengths
from keras_transformer.training.schedule import BudgetSchedule, TransformerSchedule
from keras_transformer.training.wallclock import FINISH_SECONDS

logger = logging.getLogger(__name__)

__all__ = ["Batches", "RunPlan", "fit_length", "resolve_plan", "resolve_sizes"]

BUDGET_TEST_TRANSLATIONS = 1000
"""With a time budget, the test pairs translated for BLEU and chrF (the loss and accuracy still
cover the whole split): the evaluation's time comes out of the budget, and 1,000 pairs rank runs
as the whole split does (docs/performance.md scores every run on 1,000 pairs)."""


class Batches(NamedTuple):
    """The datasets of a run (`(inputs, labels)` batches) and its label tokens per epoch."""

    train: Any
    validation: Any
    test: Any = None
    tokens_per_epoch: int = 0


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """Everything a run decides, decided once (`resolve_plan`).

    Args:
        settings: what the user asked (`TrainConfig` or `PretrainConfig`), as made.
        kind: the recipe (`recipes.recipe_name`).
        epochs, batch_size, max_length, vocab_size, num_layers, d_model, num_heads, dff,
            dropout: the run's sizes (`max_length`: one side's framed tokens).
        model: the sizes the model is built with.
        learning_rate: a constant, a `BudgetSchedule` or the paper's `TransformerSchedule`.
        precision, xla: from the devices (`devices.set_up_devices`).
        pad_to_bucket: batches padded to a few bucket lengths (XLA, TPU) or to their longest.
        time_budget: seconds of the whole job, or None.
        steps_per_epoch, tokens_per_batch: the pace's inputs (`_pace_inputs`).
        epoch_seconds: an epoch at the planned pace, or None where the pace says nothing.
        test_translations: test pairs translated for BLEU (None: all).
        sized: the sizes chosen from the data.
        measured: what the tokenized pairs said (pieces per word, the vocabulary asked for).
        schedule: the planned schedule a time budget reshapes (None: another rate).
        recorded: what `config.json` records of the plan (`_recorded`).
    """

    settings: Any
    kind: str
    epochs: int
    batch_size: int
    max_length: int
    vocab_size: int | None
    num_layers: int
    d_model: int
    num_heads: int
    dff: int
    dropout: float
    model: TransformerConfig
    learning_rate: Any
    precision: str | None
    xla: bool
    pad_to_bucket: bool
    time_budget: float | None
    steps_per_epoch: int
    tokens_per_batch: float
    epoch_seconds: float | None
    test_translations: int | None
    sized: dict
    measured: dict
    schedule: BudgetSchedule | None
    recorded: dict


def resolve_plan(
    settings,
    task,
    init,
    kind: str,
    devices,
    recipe_type,
    seconds_left: Callable[[], float] | None = None,
) -> tuple[RunPlan, dict, Batches]:
    """`(plan, tokenizers, batches)` of a run: see the module docstring for the order.

    Args:
        settings: a `TrainConfig` (or `PretrainConfig`), only read.
        task: the run's examples (`recipes.load_data`).
        init: what `--init-from` names (`init_from.load_init`), or None.
        kind: the recipe's name.
        devices: `devices.Devices` (precision and XLA are decided there).
        recipe_type: the recipe's class: its `vocabularies`, `make_batches` and `LEARNING_RATE`.
        seconds_left: the budget's seconds left now (`RunClock.left`); None: the whole budget.
    """
    sizes, sized = resolve_sizes(settings, task, init, kind)
    sizes.update(batch_size=settings.batch_size, warmup_steps=settings.warmup_steps)
    tokenizers = recipe_type.vocabularies(settings, task, init, sizes["vocab_size"])
    measured = {}
    if kind in MEASURED_LENGTH:
        chosen, measured = fit_length(sizes, task, _sides(tokenizers))
        if chosen:
            logger.info("sized from the tokenized training pairs: %s", chosen)
        sizes.update(chosen)
        sized.update(chosen)
    model = _model_sizes(sizes, kind, init, settings.init_from)
    pad_to_bucket = devices.xla or settings.strategy == "tpu"  # XLA compiles a step per shape
    length = sizes["max_length"] if kind == "prefix" else model.max_length
    batches = recipe_type.make_batches(settings, task, tokenizers, length, pad_to_bucket)
    per_word = measured.get("pieces_per_word", {}).get("target", planning.PIECES_PER_WORD)
    steps, tokens = _pace_inputs(
        task.train,
        int(batches.train.cardinality()),
        sizes["batch_size"],
        sizes["max_length"],
        per_word,
    )
    rate = _learning_rate(settings, sizes, recipe_type, steps, tokens, seconds_left)
    schedule = rate if isinstance(rate, BudgetSchedule) else None
    plan = RunPlan(
        settings=settings,
        kind=kind,
        **{name: sizes[name] for name in (*SIZE_FIELDS, "dropout", "batch_size")},
        model=model,
        learning_rate=rate,
        precision=devices.precision,
        xla=devices.xla,
        pad_to_bucket=pad_to_bucket,
        time_budget=settings.time_budget,
        steps_per_epoch=steps,
        tokens_per_batch=tokens,
        epoch_seconds=_epoch_seconds(steps, tokens, sizes),
        test_translations=None if settings.time_budget is None else BUDGET_TEST_TRANSLATIONS,
        sized=sized,
        measured=measured,
        schedule=schedule,
        recorded=_recorded(settings, sizes, sized, schedule, devices),
    )
    return plan, tokenizers, batches


SIZE_FIELDS = ("epochs", "max_length", "vocab_size", "num_layers", "d_model", "num_heads", "dff")
"""The sizes of a run that `resolve_sizes` completes (with `dropout`)."""

MEASURED_LENGTH = ("translation", "prefix")
"""Recipes that choose `max_length` from their tokenized training pairs (`fit_length`)."""


def resolve_sizes(config, task, init, recipe: str) -> tuple[dict, dict]:
    """`(sizes, sized)`: every size of the run (`SIZE_FIELDS` and `dropout`), and those chosen
    from the data; `config` is only read.

    Taken, in order, from `config`, then the translation run `--init-from` continues
    (`init.inherited_sizes`; `init_from.load_run` checked the given ones against it), then from
    the corpus (`planning.plan_training` on `corpus_stats` of the training pairs) for those
    still unset. A recipe of `MEASURED_LENGTH` leaves `max_length` None: it is chosen from the
    tokenized pairs (`fit_length`). Dropout, where not given, is `planning.default_dropout`'s."""
    sizes = {name: getattr(config, name) for name in (*SIZE_FIELDS, "dropout")}
    if init is not None and recipe in MEASURED_LENGTH:  # continue a translator
        sizes.update(init.inherited_sizes(config))
    unset = [name for name in SIZE_FIELDS if sizes[name] is None]
    sized, plan = {}, None
    if unset or sizes["dropout"] is None:
        stats, budget = planning.corpus_stats(task.train), config.time_budget
        plan = planning.plan_training(stats, budget_seconds=budget, batch_size=config.batch_size)
    if unset:
        sized = {name: getattr(plan, name) for name in unset}
        if recipe in MEASURED_LENGTH:  # chosen from the learnt pieces instead
            sized.pop("max_length", None)
        chosen_text = ", ".join(f"{name} {value}" for name, value in sized.items())
        logger.info("sized from the %d training pairs: %s", len(task.train), chosen_text)
        sizes.update(sized)
    if sizes["dropout"] is None:  # a task sized from its data, --dropout not given
        given_epochs = config.epochs
        passes = plan.passes if given_epochs is None or config.time_budget else given_epochs
        sized["dropout"] = sizes["dropout"] = planning.default_dropout(config.task, sizes, passes)
        logger.info("dropout %g (%.1f passes planned)", sized["dropout"], passes)
    return sizes, sized


def _recorded(settings, sizes: dict, sized: dict, schedule, devices) -> dict:
    """`config.json`'s entries of the plan: the sizes over the settings' fields (a budget run's
    epoch cap is no plan: `"epochs": null`), the warm-up and steps planned, what was sized from
    the data, precision and XLA as resolved."""
    capped = settings.time_budget is not None and settings.epochs == BUDGET_EPOCHS
    names = (*SIZE_FIELDS, "dropout")
    recorded = {name: sizes[name] for name in names if name in settings.settings}
    if capped:
        recorded["epochs"] = None
    if schedule is not None:
        recorded.update(warmup_steps=schedule.warmup_steps, planned_steps=schedule.total_steps)
    else:
        recorded["planned_steps"] = None
    sized = {k: v for k, v in sized.items() if k != "epochs" or not capped}
    return {
        **recorded,
        "sized_from_data": sized,
        "jit_compile_resolved": devices.xla,
        "mixed_precision_resolved": devices.precision,
        "num_replicas": devices.replicas,
    }


def _sides(tokenizers: dict) -> dict:
    """`{"source", "target"}` tokenizers (a joint one serves both)."""
    joint = tokenizers.get("joint")
    return {side: tokenizers.get(side, joint) for side in ("source", "target")}


def _model_sizes(sizes: dict, kind: str, init, init_from: str | None) -> TransformerConfig:
    """The model's sizes: the run's (a language model's positions hold source and target), or,
    for a classifier fine-tuned from a pre-training run (`init_from`), that run's with this
    run's dropout."""
    if kind == "sequence" and init is not None:
        pretrained = {**init[2], "dropout": sizes["dropout"]}
        model = TransformerConfig.from_dict(pretrained)
        logger.info("fine-tuning the encoder of %s: %s", init_from, model)
        return model
    length = 2 * sizes["max_length"] if kind == "prefix" else sizes["max_length"]
    return TransformerConfig.from_dict({**sizes, "max_length": length})


def _learning_rate(settings, sizes, recipe_type, steps: int, tokens: float, seconds_left):
    """The run's learning rate, decided here once (the module docstring, step 6)."""
    if settings.learning_rate is not None:
        return settings.learning_rate
    if recipe_type.LEARNING_RATE is not None:
        return recipe_type.LEARNING_RATE
    if not settings.planned_schedule:
        return TransformerSchedule(sizes["d_model"], sizes["warmup_steps"])
    budget = settings.time_budget
    if budget is not None and seconds_left is not None:
        budget = max(1.0, seconds_left() - FINISH_SECONDS)
    schedule = planning.plan_schedule(
        settings.task,
        sizes,
        budget_seconds=budget,
        warmup_steps=sizes["warmup_steps"],
        steps_per_epoch=steps,
        tokens_per_batch=tokens,
    )
    return BudgetSchedule(*schedule)


def _pace_inputs(
    pairs, batches: int, batch_size: int, max_length: int, pieces_per_word: float
) -> tuple[int, float]:
    """Steps per epoch (`batches`, else the pairs over the batch size) and target tokens per
    batch (`planning.batch_tokens` of the measured pieces per word)."""
    texts = [target for _, target in pairs if isinstance(target, str)]
    words = sum(len(target.split()) for target in texts)
    tokens = planning.batch_tokens(
        batch_size, words, max(1, len(texts)), pieces_per_word, max_length
    )
    return (batches if batches > 0 else max(1, len(pairs) // batch_size)), tokens


def _epoch_seconds(steps: int, tokens_per_batch: float, sizes) -> float | None:
    """Seconds of `steps` updates at the planned pace (`planning.pace`), or None for runs the
    pace does not describe (sizes not set). `sizes`: `num_layers`, `d_model`, `dff`,
    `vocab_size`."""
    try:
        pace = planning.pace(
            sizes["num_layers"], sizes["d_model"], sizes["dff"], sizes["vocab_size"]
        )
    except TypeError:  # a size left unset (None)
        return None
    return steps * tokens_per_batch / pace


def fit_length(sizes: dict, task, tokenizers: dict) -> tuple[dict, dict]:
    """`(chosen, measured)`: `max_length` where `sizes` leaves it None, chosen from the pieces of
    the training and validation pairs (at most 1 % of them cut; the test pairs are not read),
    the vocabulary size learnt where smaller than asked, and the pieces per word of each side
    with the vocabulary asked for (config.json)."""
    pairs = [*task.train, *task.validation]
    texts = {"source": [s for s, _ in pairs], "target": [t for _, t in pairs]}
    lengths = {side: token_lengths(texts[side], tokenizers[side]) for side in texts}
    train = len(task.train)
    chosen = {}
    if sizes["max_length"] is None:
        chosen["max_length"] = planning.max_length_from_tokens(lengths["source"], lengths["target"])
    max_length = chosen.get("max_length", sizes["max_length"])
    for side in texts:
        report_truncated(
            lengths[side][:train], max_length, side=side, chosen="max_length" in chosen
        )
    words = {side: sum(len(text.split()) for text in texts[side][:train]) for side in texts}
    per_word = {
        side: round(float(lengths[side][:train].sum()) / max(1, words[side]), 3) for side in texts
    }
    real = max(tokenizer.vocab_size for tokenizer in tokenizers.values())
    if (
        sizes["vocab_size"] is not None and real < sizes["vocab_size"]
    ):  # config.json tells the truth
        chosen["vocab_size"] = real
    return chosen, {"pieces_per_word": per_word, "vocab_size_requested": sizes["vocab_size"]}
