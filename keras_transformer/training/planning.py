"""The plan of a training run sized from its corpus: model rung, schedule, epochs and steps.

Pure functions (no TensorFlow). `plan_training(stats, budget_seconds=...)` turns the corpus
measurements of `data.sizing.corpus_stats` into a `TrainingPlan`; `plan_schedule` gives the
warm-up, peak and length of a `BudgetSchedule`. Both return values: the caller
(`training.run.train`) applies them to its config. The measurements behind the constants are in
docs/performance.md ("Sizing a run from its corpus").

**Model** (`choose_model`): the largest rung of `MODEL_SIZES` whose budget still buys at least
`MIN_EPOCHS` passes over the data at the pace of `TARGET_TOKENS_PER_CPU_SECOND`, and which has
at most `PARAMS_PER_TOKEN` parameters per training target token; the smallest otherwise.

**Vocabulary** (`plan_vocab_size`): the corpus's size (`data.sizing.choose_vocab_size`), at most
the rung's `vocab_cap`: the size at which the output projection costs as many multiply-adds per
target token as all the layers below it. On 95k Anki pairs and ten CPU minutes, 2 x 64 layers with
4,000 pieces scored 7 BLEU above the same layers with 10,500 (docs/performance.md).

**Schedule** (`choose_warmup`, `peak_learning_rate`): Adam on `BudgetSchedule`, a linear warm-up
over 8 % of the expected steps (kept in [10, 4000]) to a peak of `7e-4 * sqrt(128 / d_model)`
(2e-3 for the 2 x 64 rung of a run sized from its corpus, measured: `RUNG_PEAKS`),
then a cosine decay to zero at the last expected step. Label smoothing and dropout 0.1.

**Epochs**: with a budget, training runs until the budget (`epochs` is a cap of 1000); without
one, enough epochs for about `TARGET_STEPS` updates, at least 3 and at most 30.

Example:

>>> from keras_transformer.data.sizing import corpus_stats
>>> pairs = [("a small house", "ein kleines Haus"), ("the house", "das Haus")] * 50
>>> plan = plan_training(corpus_stats(pairs), budget_seconds=600)
>>> plan.vocab_size, plan.d_model, plan.warmup_steps >= 10
(1000, 64, True)
"""

from __future__ import annotations

import math
from typing import NamedTuple

from keras_transformer._validation import check_int, check_number
from keras_transformer.choices import DATA_SIZED_TASKS
from keras_transformer.data.sizing import (
    CorpusStats,
    check_stats,
    choose_max_length,
    choose_vocab_size,
    target_tokens,
)
from keras_transformer.models.parameters import transformer_parameters
from keras_transformer.training.config import BUDGET_EPOCHS


class ModelSize(NamedTuple):
    """One rung of the model ladder."""

    name: str
    num_layers: int
    d_model: int
    num_heads: int
    dff: int


MODEL_SIZES = (
    ModelSize("tiny", 2, 64, 4, 256),
    ModelSize("small", 3, 128, 4, 512),
    ModelSize("base", 4, 256, 4, 1024),
    ModelSize("large", 6, 512, 8, 2048),
)
"""The ladder `choose_model` picks from, smallest first."""

TARGET_TOKENS_PER_CPU_SECOND = {"tiny": 6000.0, "small": 1900.0, "base": 650.0, "large": 150.0}
"""Training pace of each rung, target tokens per second of process CPU time (all threads);
measured for "small", scaled by multiply-adds for the others (docs/performance.md)."""

MIN_EPOCHS = 8
"""A size is chosen for a budget only if the budget buys this many passes over the data."""

PARAMS_PER_TOKEN = 4.0
"""At most this many parameters per training target token. Was 20: on a 29k-pair caption corpus
(550k target pieces) a 30-minute budget then picked 3 x 128 layers with 7,000 pieces (3.3M
parameters, 6 a token), which made 20 passes and scored 30.0 BLEU, 3.4 below the 2 x 64 rung
(1.6 a token) at 30 minutes and 0.5 below its own 10-minute run (docs/performance.md)."""

TARGET_STEPS = 4000
"""Without a budget: epochs enough for about this many updates."""


class TrainingPlan(NamedTuple):
    """The sizes and schedule `plan_training` chose."""

    vocab_size: int
    model: str
    num_layers: int
    d_model: int
    num_heads: int
    dff: int
    dropout: float
    label_smoothing: float
    batch_size: int
    max_length: int
    peak_learning_rate: float
    warmup_steps: int
    estimated_steps: int
    epochs: int
    budget_seconds: float | None


class SchedulePlan(NamedTuple):
    """The arguments of a `BudgetSchedule`: peak rate, warm-up steps and expected steps."""

    peak_learning_rate: float
    warmup_steps: int
    total_steps: int


def model_parameters(size: ModelSize, vocab_size: int) -> int:
    """Weights of a shared-embedding encoder-decoder of this rung (`transformer_parameters`)."""
    return transformer_parameters(
        vocab_size,
        vocab_size,
        num_layers=size.num_layers,
        d_model=size.d_model,
        num_heads=size.num_heads,
        dff=size.dff,
        share_embeddings=True,
    )


def layer_multiply_adds(num_layers: int, d_model: int, dff: int) -> int:
    """Multiply-adds per target token of the encoder and decoder layers (projections and
    feed-forward; attention scores, which grow with the length, left out).

    >>> layer_multiply_adds(2, 64, 256)
    229376
    """
    encoder = 4 * d_model * d_model + 2 * d_model * dff
    decoder = 8 * d_model * d_model + 2 * d_model * dff  # self- and cross-attention
    return num_layers * (encoder + decoder)


def vocab_cap(size: ModelSize) -> int:
    """The largest vocabulary for a rung: its output projection (`d_model * vocab` multiply-adds
    a target token) costs at most what its layers cost; rounded down to 500, at least 1000.

    >>> tuple(vocab_cap(size) for size in MODEL_SIZES)
    (3500, 10500, 28500, 86000)
    """
    per_piece = layer_multiply_adds(size.num_layers, size.d_model, size.dff) / size.d_model
    return int(max(1000, 500 * math.floor(per_piece / 500)))


def plan_vocab_size(stats: CorpusStats, size: ModelSize) -> int:
    """The corpus's vocabulary size (`choose_vocab_size`), at most the rung's `vocab_cap`.

    >>> from keras_transformer.data.sizing import corpus_stats
    >>> stats = corpus_stats([(f"w{i} x", f"v{i} y") for i in range(60_000)])  # 240k words
    >>> choose_vocab_size(stats), plan_vocab_size(stats, MODEL_SIZES[0])
    (4500, 3500)
    """
    return min(choose_vocab_size(stats), vocab_cap(size))


def choose_model(stats: CorpusStats, budget_seconds: float | None = None) -> ModelSize:
    """The largest `MODEL_SIZES` rung that the data and the budget both support.

    The data: at most `PARAMS_PER_TOKEN` parameters per training target token.
    The budget (if any): at least `MIN_EPOCHS` passes over the data at the
    measured pace. The smallest rung when none qualifies.
    """
    tokens = target_tokens(check_stats(stats))
    chosen = MODEL_SIZES[0]
    for size in MODEL_SIZES[1:]:
        fits = model_parameters(size, plan_vocab_size(stats, size)) <= PARAMS_PER_TOKEN * tokens
        if budget_seconds is not None:
            epochs = budget_seconds * TARGET_TOKENS_PER_CPU_SECOND[size.name] / tokens
            fits = fits and epochs >= MIN_EPOCHS
        if fits:
            chosen = size
    return chosen


RUNG_PEAKS = {"tiny": 2e-3}
"""Peaks measured for a rung on real corpora, used for runs sized from their data with that
rung's layers (`rung_of`). The 2 x 64 rung at 2e-3 instead of the rule's 9.9e-4, 1,000
validation pairs, the same passes (benchmarks/quality_ideas.py, docs/performance.md): Anki
en-es 6 passes 24.0 -> 27.8 BLEU greedy, 26.5 -> 28.7 with 4 beams; Anki en-fr 5 passes
27.6 -> 31.2 greedy, 31.0 -> 33.5 with 4 beams."""


def peak_learning_rate(d_model: int, rung: str | None = None) -> float:
    """The peak of the planned schedule: the rung's measured peak (`RUNG_PEAKS`), else
    `7e-4 * sqrt(128 / d_model)`.

    >>> peak_learning_rate(128), peak_learning_rate(512), peak_learning_rate(64)
    (0.0007, 0.00035, 0.00099)
    >>> peak_learning_rate(64, "tiny")
    0.002
    """
    if rung in RUNG_PEAKS:
        return RUNG_PEAKS[rung]
    return round(7e-4 * math.sqrt(128 / check_int("d_model", d_model)), 6)


def rung_of(config) -> str | None:
    """The `MODEL_SIZES` rung a run sized from its data (`DATA_SIZED_TASKS`) trains, or None:
    another task, or layers that are not a rung's."""
    if getattr(config, "task", None) not in DATA_SIZED_TASKS:
        return None
    layers = tuple(getattr(config, n, None) for n in ("num_layers", "d_model", "num_heads", "dff"))
    return next((size.name for size in MODEL_SIZES if tuple(size[1:]) == layers), None)


def estimate_steps(
    budget_seconds: float,
    tokens_per_batch: float,
    *,
    num_layers: int,
    d_model: int,
    dff: int,
    vocab_size: int,
) -> int:
    """Updates a budget buys, at the pace of `TARGET_TOKENS_PER_CPU_SECOND` scaled by compute.

    The pace of the "small" rung (3 x 128, 3000 pieces) is scaled by the multiply-adds per
    target token of this size; `TimeBudget` corrects the estimate from the measured pace once
    training runs, so it mainly sets the warm-up's length.

    >>> small = dict(num_layers=3, d_model=128, dff=512, vocab_size=3000)
    >>> estimate_steps(100, 1900, **small)
    100
    """

    def per_token(n, d, f, v):  # encoder + decoder layers and the output projection
        return layer_multiply_adds(n, d, f) + d * v

    small = MODEL_SIZES[1]
    pace = TARGET_TOKENS_PER_CPU_SECOND[small.name] * (
        per_token(small.num_layers, small.d_model, small.dff, 3000)
        / per_token(num_layers, d_model, dff, vocab_size)
    )
    return max(1, int(budget_seconds * pace / tokens_per_batch))


def choose_warmup(total_steps: int) -> int:
    """Warm-up steps: 8 % of the expected steps, kept in [10, 4000].

    >>> choose_warmup(1000), choose_warmup(100_000), choose_warmup(50)
    (80, 4000, 10)
    """
    check_int("total_steps", total_steps)
    return int(min(4000, max(10, round(0.08 * total_steps))))


def plan_training(
    stats: CorpusStats, *, budget_seconds: float | None = None, batch_size: int = 64
) -> TrainingPlan:
    """All sizes for a training run on this corpus (see the module docstring for the rules).

    Args:
        stats: from `data.sizing.corpus_stats(train_pairs)`.
        budget_seconds: training time (process CPU seconds, or wall seconds on
            a machine of its own); `None` to size by the data alone.
        batch_size: sentence pairs per batch.

    Returns:
        A `TrainingPlan`; `estimated_steps` is the first guess `BudgetSchedule`
        starts from (`TimeBudget` corrects it while training).
    """
    check_stats(stats)
    if budget_seconds is not None:
        budget_seconds = check_number("budget_seconds", budget_seconds, 0.0, open_minimum=True)
    check_int("batch_size", batch_size)
    size = choose_model(stats, budget_seconds)
    tokens_per_batch = batch_size * target_tokens(stats) / stats.num_pairs
    steps_per_epoch = max(1, stats.num_pairs // batch_size)
    if budget_seconds is not None:
        steps = budget_seconds * TARGET_TOKENS_PER_CPU_SECOND[size.name] / tokens_per_batch
        estimated_steps = max(1, int(steps))
        epochs = BUDGET_EPOCHS
    else:
        epochs = int(min(30, max(3, math.ceil(TARGET_STEPS / steps_per_epoch))))
        estimated_steps = epochs * steps_per_epoch
    return TrainingPlan(
        vocab_size=plan_vocab_size(stats, size),
        model=size.name,
        num_layers=size.num_layers,
        d_model=size.d_model,
        num_heads=size.num_heads,
        dff=size.dff,
        dropout=0.1,
        label_smoothing=0.1,
        batch_size=batch_size,
        max_length=choose_max_length(stats),
        peak_learning_rate=peak_learning_rate(size.d_model, size.name),
        warmup_steps=choose_warmup(estimated_steps),
        estimated_steps=estimated_steps,
        epochs=epochs,
        budget_seconds=budget_seconds,
    )


def plan_schedule(config, steps_per_epoch: int, tokens_per_batch: float) -> SchedulePlan:
    """The `BudgetSchedule` arguments of a run whose `config.planned_schedule` is true.

    Steps: those the budget buys (`estimate_steps`), else `epochs * steps_per_epoch`; the
    warm-up is `config.warmup_steps`, or 8 % of the steps when it is None.

    Example:
    >>> from types import SimpleNamespace
    >>> config = SimpleNamespace(time_budget=None, epochs=5, warmup_steps=None, d_model=128)
    >>> plan_schedule(config, steps_per_epoch=200, tokens_per_batch=1000.0)
    SchedulePlan(peak_learning_rate=0.0007, warmup_steps=80, total_steps=1000)
    """
    if config.time_budget is not None:
        steps = estimate_steps(
            config.time_budget,
            tokens_per_batch,
            num_layers=config.num_layers,
            d_model=config.d_model,
            dff=config.dff,
            vocab_size=config.vocab_size,
        )
    else:
        steps = config.epochs * max(1, steps_per_epoch)
    steps = max(steps, 1)
    warmup = choose_warmup(steps) if config.warmup_steps is None else config.warmup_steps
    return SchedulePlan(peak_learning_rate(config.d_model, rung_of(config)), warmup, steps)
