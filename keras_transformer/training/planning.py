"""Sizing a training run, in one place: what the corpus is (`corpus_stats`), the vocabulary and
length it needs, and the plan of the run (model rung, schedule, epochs and steps).

Pure functions (no TensorFlow). `corpus_stats(pairs)` measures a parallel corpus;
`plan_training(stats, budget_seconds=...)` turns it into a `TrainingPlan`; `plan_schedule` gives
the warm-up, peak and length of a `BudgetSchedule` (`plan.resolve_sizes` completes a run's unset
sizes from them). The measurements behind the constants are in docs/performance.md ("Sizing a
run from its corpus").

**Vocabulary** (`choose_vocab_size`): a WordPiece vocabulary for each side, of
`8000 * sqrt(words / 700_000)` pieces (`words` counts both sides), rounded to 500 and kept in
[1000, 32000]: smaller vocabularies for less data (Sennrich & Zhang, 2019). The plan then caps it
by what the model can afford (`training.planning.plan_vocab_size`).

**Length** (`max_length_from_tokens`): once the vocabularies are learnt, the measured pieces
of the training and validation pairs decide (never the test pairs): the smallest length,
rounded up to 8 and kept in [16, 256], that frames both sides (`[START]`/`[END]` included) of
all but `MAX_TRUNCATED` (1 %) of the pairs.
Before that (a plan, or a run without tokenizers), `choose_max_length` estimates it from words:
the 99th percentile of words per sentence on the longer side, times `PIECES_PER_WORD`, plus 2.

**Pace** (`pace`): the one pace of every rule below, target tokens per CPU second: the measured
pace of the 3 x 128 rung with 3,000 pieces (`PACE_REFERENCE`) scaled by multiply-adds per target
token (`multiply_adds`, layers and output projection).

**Model** (`choose_model`): the largest rung of `MODEL_SIZES` whose budget still buys at least
`MIN_EPOCHS` passes over the data (`RUNG_MIN_EPOCHS` for 2 x 128 and 3 x 128) at its `pace`, and
which has at most `PARAMS_PER_TOKEN` parameters per training target token; the smallest
otherwise.

**Vocabulary** (`plan_vocab_size`): the corpus's size (`choose_vocab_size`), at most
the rung's `vocab_cap`: the size at which the output projection costs as many multiply-adds per
target token as all the layers below it (3,500 for 2 x 64), or its measured cap
(`RUNG_VOCAB_CAPS`: 3,500 for 2 x 128, 4,000 for 3 x 128).

**Schedule** (`choose_warmup`, `peak_learning_rate`): Adam on `BudgetSchedule`, a linear warm-up
over 8 % of the expected steps (kept in [10, 4000]) to a peak of `7e-4 * sqrt(128 / d_model)`
(2e-3 for the 2 x 64 rung and 1.4e-3 for 2 x 128 and 3 x 128 in a run sized from its corpus:
`RUNG_PEAKS`), then a cosine decay to zero at the last expected step. Label smoothing 0.1;
dropout 0.1, except for a rung measured without (`RUNG_DROPOUT`: the 2 x 64 rung) in a run that
plans at most `FEW_PASSES` passes over its corpus (`default_dropout`).

**Epochs**: with a budget, training runs until the budget (`epochs` is a cap of 1000); without
one, enough epochs for about `TARGET_STEPS` updates, at least 3 and at most 30.

Example:

>>> pairs = [("a small house", "ein kleines Haus"), ("the house", "das Haus")] * 50
>>> plan = plan_training(corpus_stats(pairs), budget_seconds=600)
>>> plan.vocab_size, plan.d_model, plan.warmup_steps >= 10
(1000, 64, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from keras_transformer._validation import check_int, check_number
from keras_transformer.choices import DATA_SIZED_TASKS
from keras_transformer.errors import UserInputError
from keras_transformer.models.parameters import transformer_parameters
from keras_transformer.training.config import BUDGET_EPOCHS, DEFAULT_DROPOUT

PIECES_PER_WORD = 1.5
"""WordPiece pieces per word assumed when sizing lengths and paces (docs/performance.md)."""


MAX_TRUNCATED = 0.01
"""`max_length_from_tokens` truncates at most this share of the training pairs."""


class CorpusStats(NamedTuple):
    """Measurements of a parallel corpus (words split on whitespace)."""

    num_pairs: int
    source_words: int
    target_words: int
    source_chars: int
    target_chars: int
    source_types: int
    target_types: int
    mean_source_words: float
    mean_target_words: float
    p99_source_words: int
    p99_target_words: int


def _percentile(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(math.ceil(q * len(ordered))) - 1)]


def corpus_stats(pairs: Sequence[tuple[str, str]]) -> CorpusStats:
    """Counts pairs, words, characters and distinct words, and sentence lengths in words.

    Args:
        pairs: `(source, target)` strings, e.g. a task's training split.

    Returns:
        A `CorpusStats`.
    """
    pairs = list(pairs)
    if not pairs:
        raise UserInputError(
            "pairs is empty; pass the training pairs (source, target) of the corpus"
        )
    for index, pair in enumerate(pairs):
        if (
            not isinstance(pair, tuple | list)
            or len(pair) != 2
            or not all(isinstance(side, str) for side in pair)
        ):
            raise TypeError(
                f"pairs[{index}]={pair!r} is not a (source, target) pair of str; "
                "pass a list of 2-tuples of str"
            )
    source_lengths, target_lengths = [], []
    source_types, target_types = set(), set()
    source_chars = target_chars = 0
    for source, target in pairs:
        source_words, target_words = source.split(), target.split()
        source_lengths.append(len(source_words))
        target_lengths.append(len(target_words))
        source_types.update(source_words)
        target_types.update(target_words)
        source_chars += len(source)
        target_chars += len(target)
    n = len(pairs)
    return CorpusStats(
        num_pairs=n,
        source_words=sum(source_lengths),
        target_words=sum(target_lengths),
        source_chars=source_chars,
        target_chars=target_chars,
        source_types=len(source_types),
        target_types=len(target_types),
        mean_source_words=round(sum(source_lengths) / n, 2),
        mean_target_words=round(sum(target_lengths) / n, 2),
        p99_source_words=_percentile(source_lengths, 0.99),
        p99_target_words=_percentile(target_lengths, 0.99),
    )


def check_stats(stats: CorpusStats) -> CorpusStats:
    """`stats` if it is a `CorpusStats`, else `TypeError`."""
    if not isinstance(stats, CorpusStats):
        raise TypeError(f"stats={stats!r} must be a CorpusStats; get one from corpus_stats(pairs)")
    return stats


def choose_vocab_size(stats: CorpusStats) -> int:
    """Vocabulary size the data asks for: `8000 * sqrt(words / 700k)`, rounded to 500, in
    [1000, 32000] (the plan caps it by the model: `training.planning.plan_vocab_size`).

    >>> choose_vocab_size(corpus_stats([("a b", "c d")] * 175_000))  # 700k words
    8000
    """
    words = check_stats(stats).source_words + stats.target_words
    size = 8000 * math.sqrt(words / 700_000)
    return int(min(32000, max(1000, 500 * round(size / 500))))


def choose_max_length(stats: CorpusStats) -> int:
    """Tokens per framed sequence: 1.5 pieces per word at the 99th percentile, + 2, to 8s."""
    words = max(check_stats(stats).p99_source_words, stats.p99_target_words)
    length = math.ceil(words * PIECES_PER_WORD) + 2
    return int(min(256, max(16, 8 * math.ceil(length / 8))))


def target_tokens(stats: CorpusStats) -> float:
    """Target tokens of the corpus: `batch_tokens` of one batch of all its pairs."""
    return batch_tokens(stats.num_pairs, stats.target_words, max(1, stats.num_pairs))


def batch_tokens(
    batch_size: int,
    words: int,
    pairs: int,
    pieces_per_word: float = PIECES_PER_WORD,
    max_length: float = math.inf,
) -> float:
    """Target tokens of a batch, the one formula of the pace: `pieces_per_word` a word of the
    `words` over `pairs` targets, plus an `[END]` a pair, at most `max_length` a row.

    >>> batch_tokens(64, 1000, 100), batch_tokens(64, 1000, 100, 2.0, max_length=16)
    (1024.0, 1024.0)
    """
    return batch_size * min(max_length * pairs, pieces_per_word * words + pairs) / pairs


def max_length_from_tokens(
    source_lengths: Sequence[int],
    target_lengths: Sequence[int],
    *,
    max_truncated: float = MAX_TRUNCATED,
) -> int:
    """Tokens per framed sequence so that at most `max_truncated` of the pairs are cut.

    Args:
        source_lengths: pieces of each training source (without `[START]`/`[END]`).
        target_lengths: pieces of each training target, in the same order.
        max_truncated: share of pairs (source or target too long) allowed to be cut.

    Returns:
        A multiple of 8 in [16, 256] (the cap may cut more pairs).

    >>> max_length_from_tokens([3] * 99 + [40], [20] * 99 + [5])  # one pair in 100 is cut
    24
    >>> max_length_from_tokens([3] * 98 + [40] * 2, [5] * 100)
    48
    """
    if len(source_lengths) != len(target_lengths) or not len(source_lengths):
        raise ValueError(
            f"source_lengths ({len(source_lengths)}) and target_lengths ({len(target_lengths)}) "
            "must be non-empty and of one length: the pieces of each training pair"
        )
    framed = sorted(
        max(int(s), int(t)) + 2 for s, t in zip(source_lengths, target_lengths, strict=True)
    )
    kept = math.ceil((1 - max_truncated) * len(framed) - 1e-9)  # pairs that must fit
    needed = framed[max(kept, 1) - 1]
    return int(min(256, max(16, 8 * math.ceil(needed / 8))))


class ModelSize(NamedTuple):
    """One rung of the model ladder."""

    name: str
    num_layers: int
    d_model: int
    num_heads: int
    dff: int


MODEL_SIZES = (
    ModelSize("tiny", 2, 64, 4, 256),
    ModelSize("mini", 2, 128, 4, 512),
    ModelSize("small", 3, 128, 4, 512),
    ModelSize("base", 4, 256, 4, 1024),
    ModelSize("large", 6, 512, 8, 2048),
)
"""The ladder `choose_model` picks from, smallest first."""

MIN_EPOCHS = 2.3
"""A size is chosen for a budget only if the budget buys this many passes over the data at the
planned pace (cautious: about three times as many are made; docs/performance.md, "The sizing
constants")."""

RUNG_MIN_EPOCHS = {"mini": 5.08, "small": 2.145}
"""Planned passes a budget must buy for a rung, in place of `MIN_EPOCHS` (docs/performance.md,
"The sizing constants")."""

PARAMS_PER_TOKEN = 2.5
"""At most this many parameters per training target token (docs/performance.md, "The sizing
constants")."""

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
    passes: float


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


PACE_REFERENCE = (MODEL_SIZES[2], 3000, 1900.0)  # the "small" rung, 3 x 128
"""The measured pace every other is scaled from (`pace`): the 3 x 128 rung with 3,000 pieces
made 1,900 target tokens a second of process CPU time (all threads; docs/performance.md,
"The sizing constants")."""


def multiply_adds(num_layers: int, d_model: int, dff: int, vocab_size: int) -> int:
    """Multiply-adds per target token of a model: its layers (`layer_multiply_adds`) and its
    output projection (`d_model * vocab_size`).

    >>> multiply_adds(2, 64, 256, 3500)
    453376
    """
    return layer_multiply_adds(num_layers, d_model, dff) + d_model * vocab_size


def pace(num_layers: int, d_model: int, dff: int, vocab_size: int) -> float:
    """Training pace of a model, target tokens per CPU second: the one pace of the plan (the
    rung `choose_model` picks, the passes and so the dropout of `plan_training`, the steps and so
    the warm-up of `estimate_steps`, an epoch's planned seconds in `plan.RunPlan`).
    `PACE_REFERENCE`'s measured pace scaled by multiply-adds per target token (`multiply_adds`).

    >>> round(pace(3, 128, 512, 3000)), round(pace(2, 64, 256, 3500))
    (1900, 7377)
    >>> round(pace(2, 128, 512, 3500)), round(pace(3, 128, 512, 4000))  # 2 x 128, 3 x 128 caps
    (2449, 1771)
    """
    size, vocab, measured = PACE_REFERENCE
    reference = multiply_adds(size.num_layers, size.d_model, size.dff, vocab)
    return measured * reference / multiply_adds(num_layers, d_model, dff, vocab_size)


def rung_pace(size: ModelSize, vocab_size: int) -> float:
    """`pace` of a `MODEL_SIZES` rung with `vocab_size` pieces."""
    return pace(size.num_layers, size.d_model, size.dff, vocab_size)


def vocab_cap(size: ModelSize) -> int:
    """The largest vocabulary for a rung: its output projection (`d_model * vocab` multiply-adds
    a target token) costs at most what its layers cost; rounded down to 500, at least 1000.

    >>> tuple(vocab_cap(size) for size in MODEL_SIZES)
    (3500, 7000, 10500, 28500, 86000)
    """
    per_piece = layer_multiply_adds(size.num_layers, size.d_model, size.dff) / size.d_model
    return int(max(1000, 500 * math.floor(per_piece / 500)))


RUNG_VOCAB_CAPS = {"mini": 3500, "small": 4000}
"""Vocabulary caps measured for a rung, in place of its `vocab_cap` (docs/performance.md, "The
sizing constants")."""


def plan_vocab_size(stats: CorpusStats, size: ModelSize) -> int:
    """The corpus's vocabulary size (`choose_vocab_size`), at most the rung's measured cap
    (`RUNG_VOCAB_CAPS`), else its `vocab_cap`.

        >>> stats = corpus_stats([(f"w{i} x", f"v{i} y") for i in range(60_000)])  # 240k words
    >>> choose_vocab_size(stats), plan_vocab_size(stats, MODEL_SIZES[0])
    (4500, 3500)
    """
    return min(choose_vocab_size(stats), RUNG_VOCAB_CAPS.get(size.name, vocab_cap(size)))


def choose_model(stats: CorpusStats, budget_seconds: float | None = None) -> ModelSize:
    """The largest `MODEL_SIZES` rung that the data and the budget both support.

    The data: at most `PARAMS_PER_TOKEN` parameters per training target token.
    The budget (if any): at least `MIN_EPOCHS` passes over the data at the
    measured pace. The smallest rung when none qualifies.
    """
    tokens = target_tokens(check_stats(stats))
    chosen = MODEL_SIZES[0]
    for size in MODEL_SIZES[1:]:
        vocab = plan_vocab_size(stats, size)
        fits = model_parameters(size, vocab) <= PARAMS_PER_TOKEN * tokens
        if budget_seconds is not None:
            epochs = budget_seconds * rung_pace(size, vocab) / tokens
            fits = fits and epochs >= RUNG_MIN_EPOCHS.get(size.name, MIN_EPOCHS)
        if fits:
            chosen = size
    return chosen


RUNG_PEAKS = {"tiny": 2e-3, "mini": 1.4e-3, "small": 1.4e-3}
"""Peaks measured for a rung on real corpora, used for runs sized from their data with that
rung's layers (`rung_of`; docs/performance.md, "The sizing constants")."""


RUNG_DROPOUT = {"tiny": 0.0}
"""Dropout measured for a rung on real corpora (`rung_of`), used where `--dropout` is not given
on a task sized from its data and the plan makes at most `FEW_PASSES` passes over it; other
runs keep `DEFAULT_DROPOUT` (docs/performance.md, "The sizing constants")."""

FEW_PASSES = 8.6
"""Planned passes over the training pairs (`TrainingPlan.passes`) up to which a rung's measured
dropout applies (docs/performance.md, "The sizing constants")."""


def default_dropout(task: str, sizes, passes: float | None = None) -> float:
    """The dropout of a run that does not set it: on a task sized from its data, the rung's
    measured value (`RUNG_DROPOUT`, `rung_of`) when the plan makes at most `FEW_PASSES`
    `passes`; else `DEFAULT_DROPOUT`.

    >>> tiny = dict(num_layers=2, d_model=64, num_heads=4, dff=256)
    >>> default_dropout("tsv", tiny, passes=3.7), default_dropout("tsv", tiny, passes=11.2)
    (0.0, 0.1)
    >>> default_dropout("tsv", {**tiny, "d_model": 128}, passes=3.7)
    0.1
    """
    return _rung_dropout(rung_of(task, sizes), passes)


def _rung_dropout(rung: str | None, passes: float | None) -> float:
    if rung in RUNG_DROPOUT and passes is not None and passes <= FEW_PASSES:
        return RUNG_DROPOUT[rung]
    return DEFAULT_DROPOUT


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


def rung_of(task: str, sizes) -> str | None:
    """The `MODEL_SIZES` rung a run sized from its data (`DATA_SIZED_TASKS`) trains, or None:
    another task, or layers (`sizes`: a mapping with `num_layers`, `d_model`, `num_heads`,
    `dff`) that are not a rung's."""
    if task not in DATA_SIZED_TASKS:
        return None
    layers = tuple(sizes.get(n) for n in ("num_layers", "d_model", "num_heads", "dff"))
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
    """Updates a budget buys at the plan's `pace`; `TimeBudget` corrects the estimate from
    the measured pace once training runs, so it mainly sets the warm-up's length.

    >>> small = dict(num_layers=3, d_model=128, dff=512, vocab_size=3000)
    >>> estimate_steps(100, 1900, **small)
    100
    """
    per_second = pace(num_layers, d_model, dff, vocab_size)
    return max(1, int(budget_seconds * per_second / tokens_per_batch))


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
        stats: from `corpus_stats(train_pairs)`.
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
    vocab_size = plan_vocab_size(stats, size)
    tokens_per_batch = batch_tokens(batch_size, stats.target_words, stats.num_pairs)
    steps_per_epoch = max(1, stats.num_pairs // batch_size)
    if budget_seconds is not None:
        steps = budget_seconds * rung_pace(size, vocab_size) / tokens_per_batch
        estimated_steps = max(1, int(steps))
        epochs = BUDGET_EPOCHS
    else:
        epochs = int(min(30, max(3, math.ceil(TARGET_STEPS / steps_per_epoch))))
        estimated_steps = epochs * steps_per_epoch
    return TrainingPlan(
        vocab_size=vocab_size,
        model=size.name,
        num_layers=size.num_layers,
        d_model=size.d_model,
        num_heads=size.num_heads,
        dff=size.dff,
        dropout=_rung_dropout(size.name, estimated_steps / steps_per_epoch),
        label_smoothing=0.1,
        batch_size=batch_size,
        max_length=choose_max_length(stats),
        peak_learning_rate=peak_learning_rate(size.d_model, size.name),
        warmup_steps=choose_warmup(estimated_steps),
        estimated_steps=estimated_steps,
        epochs=epochs,
        budget_seconds=budget_seconds,
        passes=round(estimated_steps / steps_per_epoch, 2),
    )


def plan_schedule(
    task: str,
    sizes,
    *,
    budget_seconds: float | None,
    warmup_steps: int | None,
    steps_per_epoch: int,
    tokens_per_batch: float,
) -> SchedulePlan:
    """The `BudgetSchedule` arguments of a run on a planned schedule (`planned_schedule`).

    Steps: those `budget_seconds` buys (`estimate_steps`), else `epochs * steps_per_epoch`; the
    warm-up is `warmup_steps`, or 8 % of the steps when it is None. `sizes`: a mapping with the
    run's `epochs`, `num_layers`, `d_model`, `num_heads`, `dff` and `vocab_size`.

    Example:
    >>> sizes = dict(epochs=5, num_layers=2, d_model=128, num_heads=8, dff=512, vocab_size=2000)
    >>> plan_schedule("numbers", sizes, budget_seconds=None, warmup_steps=None,
    ...               steps_per_epoch=200, tokens_per_batch=1000.0)
    SchedulePlan(peak_learning_rate=0.0007, warmup_steps=80, total_steps=1000)
    """
    if budget_seconds is not None:
        steps = estimate_steps(
            budget_seconds,
            tokens_per_batch,
            num_layers=sizes["num_layers"],
            d_model=sizes["d_model"],
            dff=sizes["dff"],
            vocab_size=sizes["vocab_size"],
        )
    else:
        steps = sizes["epochs"] * max(1, steps_per_epoch)
    steps = max(steps, 1)
    warmup = choose_warmup(steps) if warmup_steps is None else warmup_steps
    peak = peak_learning_rate(sizes["d_model"], rung_of(task, sizes))
    return SchedulePlan(peak, warmup, steps)
