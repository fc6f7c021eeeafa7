"""Training sizes from the corpus: vocabulary, model, warm-up, batch, epochs and steps.

Pure functions (no TensorFlow): `corpus_stats(pairs)` measures a parallel
corpus, `plan_training(stats, budget_seconds=...)` turns the measurements into
the sizes `train --task tsv` uses. The rules and the measurements behind them:

**Vocabulary** (`choose_vocab_size`): one WordPiece vocabulary shared by both
sides (shared embeddings: fewer parameters, and names and numbers copy
through), of `8000 * sqrt(words / 700_000)` pieces, rounded to 500 and kept in
[1000, 32000], where `words` counts both sides. The square root follows the
usual finding for subword vocabularies on small data (Sennrich & Zhang, 2019:
smaller vocabularies for less data); the constant puts a 29k-pair caption
corpus (700k words on both sides) at 8000 pieces, where 8000 pieces scored
about 6 BLEU above 2000, and a 6k-pair TED corpus (220k words) at 4500.
Learning stops early on text with few distinct words (the numbers task).

**Length** (`choose_max_length`): the 99th percentile of words per sentence
on the longer side, times 1.5 WordPiece pieces per word (measured 1.4 on the
SATED TED corpora at 4000 pieces), plus `[START]`/`[END]`, rounded up to 8 and
kept in [16, 256]; longer pairs are trimmed.

**Model** (`choose_model`): the largest size of `MODEL_SIZES` whose budget
still buys at least `MIN_EPOCHS` passes over the data, at the CPU pace
measured in `TARGET_TOKENS_PER_CPU_SECOND`; the smallest otherwise. On a
few CPU-minutes and a few thousand pairs this is the smallest size: a
3 x 128 model made 50 updates of 64 TED sentence pairs in 100 CPU seconds on
the shared 2-core machine, not one pass over 6k pairs, and its greedy output
was still empty (BLEU 0); more updates of a smaller model come first. With or
without a budget, a size must also have at most `PARAMS_PER_TOKEN`
parameters per training target token.

**Schedule** (`choose_warmup`, `plan_training`): Adam on `BudgetSchedule`,
a linear warm-up over 8 % of the expected steps (kept in [10, 4000]) to a
peak of `7e-4 * sqrt(128 / d_model)` (`peak_learning_rate`) and a cosine decay to zero at the last
expected step. The paper's 4000 warm-up steps are more than a ten-minute CPU
run makes (a 3 x 128 model: about 300 updates of 64 TED pairs on the shared
2-core CPU): the rate would still be climbing when the time runs out. Label smoothing 0.1 and dropout 0.1 as in the paper.

**Epochs**: with a budget, training runs until the budget (`epochs` is a
cap of 1000); without one, enough epochs for about `TARGET_STEPS` updates,
at least 3 and at most 30.

Example:

>>> pairs = [("a small house", "ein kleines Haus"), ("the house", "das Haus")] * 50
>>> stats = corpus_stats(pairs)
>>> stats.num_pairs, stats.mean_source_words
(100, 2.5)
>>> plan = plan_training(stats, budget_seconds=600)
>>> plan.vocab_size, plan.d_model, plan.warmup_steps >= 10
(1000, 64, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple


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
"""Training pace, target tokens per second of process CPU time (all threads), measured
with batches of 64 SATED en-fr pairs (29 target pieces each, 3000-piece shared
vocabulary) on a shared 2-core CPU, TF 2.21: 3 x 128 layers 1870 (1.1 CPU s a
step), 2 x 128 1930, 3 x 256 800; 2 x 64, 4 x 256 and 6 x 512 scaled from
these by their multiply-adds. A whole budgeted run makes fewer: a 3 x 128 model
made 50 steps in its first 106 CPU seconds (tracing, the first pass through
the tokenizer and validation included)."""

MIN_EPOCHS = 8
"""A size is chosen for a budget only if the budget buys this many passes over the data."""

PARAMS_PER_TOKEN = 20.0
"""At most this many parameters per training target token (6k TED pairs: about 3.5M)."""

TARGET_STEPS = 4000
"""Without a budget: epochs enough for about this many updates."""

PIECES_PER_WORD = 1.5


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
        raise ValueError("pairs is empty; pass the training pairs (source, target) of the corpus")
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


def _check_stats(stats: CorpusStats) -> CorpusStats:
    if not isinstance(stats, CorpusStats):
        raise TypeError(f"stats={stats!r} must be a CorpusStats; get one from corpus_stats(pairs)")
    return stats


def choose_vocab_size(stats: CorpusStats) -> int:
    """Shared vocabulary size: `8000 * sqrt(words / 700k)`, rounded to 500, in [1000, 32000].

    >>> choose_vocab_size(corpus_stats([("a b", "c d")] * 175_000))  # 700k words
    8000
    """
    words = _check_stats(stats).source_words + stats.target_words
    size = 8000 * math.sqrt(words / 700_000)
    return int(min(32000, max(1000, 500 * round(size / 500))))


def choose_max_length(stats: CorpusStats) -> int:
    """Tokens per framed sequence: 1.5 pieces per word at the 99th percentile, + 2, to 8s."""
    words = max(_check_stats(stats).p99_source_words, stats.p99_target_words)
    length = math.ceil(words * PIECES_PER_WORD) + 2
    return int(min(256, max(16, 8 * math.ceil(length / 8))))


def _target_tokens(stats: CorpusStats) -> float:
    return stats.target_words * PIECES_PER_WORD + stats.num_pairs  # + [END]


def choose_model(stats: CorpusStats, budget_seconds: float | None = None) -> ModelSize:
    """The largest `MODEL_SIZES` rung that the data and the budget both support.

    The data: at most `PARAMS_PER_TOKEN` parameters per training target token.
    The budget (if any): at least `MIN_EPOCHS` passes over the data at the
    measured pace. The smallest rung when none qualifies.
    """
    tokens = _target_tokens(_check_stats(stats))
    vocab_size = choose_vocab_size(stats)
    chosen = MODEL_SIZES[0]
    for size in MODEL_SIZES[1:]:
        fits = approximate_parameters(size, vocab_size) <= PARAMS_PER_TOKEN * tokens
        if budget_seconds is not None:
            epochs = budget_seconds * TARGET_TOKENS_PER_CPU_SECOND[size.name] / tokens
            fits = fits and epochs >= MIN_EPOCHS
        if fits:
            chosen = size
    return chosen


def approximate_parameters(size: ModelSize, vocab_size: int) -> int:
    """Weights of a shared-embedding encoder-decoder of this size (biases and norms included)."""
    d, f, n = size.d_model, size.dff, size.num_layers
    attention = 4 * d * d + 4 * d
    ffn = 2 * d * f + f + d
    encoder = n * (attention + ffn + 4 * d)
    decoder = n * (2 * attention + ffn + 6 * d)
    return vocab_size * d + encoder + decoder + vocab_size


def peak_learning_rate(d_model: int) -> float:
    """The peak of the planned schedule: `7e-4 * sqrt(128 / d_model)`.

    Measured on the numbers task (d_model 128, batch 64): the paper's schedule,
    which peaks at 2e-3 after 2000 steps, made en->it's validation sequence
    accuracy swing between 0.84 and 0.95 for epochs; this peak with a cosine
    decay reached 0.99 in 1-4 epochs on en->de/fr/es/it (a constant 7e-4: 3
    epochs on en->it).

    >>> peak_learning_rate(128), peak_learning_rate(512)
    (0.0007, 0.00035)
    """
    return round(7e-4 * math.sqrt(128 / d_model), 6)


def estimate_steps(
    budget_seconds: float, tokens_per_batch: float, *, num_layers: int, d_model: int, dff: int,
    vocab_size: int,
) -> int:  # fmt: skip
    """Updates a budget buys, at the pace of `TARGET_TOKENS_PER_CPU_SECOND` scaled by compute.

    The pace of the measured "small" rung (3 x 128, 3000 pieces) is scaled by
    the multiply-adds per target token of this size; `TimeBudget` corrects the
    estimate from the measured pace once training runs, so it mainly sets the
    warm-up's length.

    >>> small = dict(num_layers=3, d_model=128, dff=512, vocab_size=3000)
    >>> estimate_steps(100, 1900, **small)
    100
    """

    def per_token(n, d, f, v):  # encoder + decoder layers and the output projection
        return n * (4 * d * d + 2 * d * f) + n * (8 * d * d + 2 * d * f) + d * v

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
    if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps < 1:
        raise ValueError(f"total_steps={total_steps!r} must be an int >= 1")
    return int(min(4000, max(10, round(0.08 * total_steps))))


def plan_training(
    stats: CorpusStats,
    *,
    budget_seconds: float | None = None,
    batch_size: int = 64,
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
    _check_stats(stats)
    if budget_seconds is not None and (
        isinstance(budget_seconds, bool)
        or not isinstance(budget_seconds, int | float)
        or not math.isfinite(budget_seconds)
        or budget_seconds <= 0
    ):
        raise ValueError(f"budget_seconds={budget_seconds!r} must be a number > 0, e.g. 600")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size={batch_size!r} must be an int >= 1, e.g. 64")
    size = choose_model(stats, budget_seconds)
    tokens_per_batch = batch_size * _target_tokens(stats) / stats.num_pairs
    steps_per_epoch = max(1, stats.num_pairs // batch_size)
    if budget_seconds is not None:
        steps = budget_seconds * TARGET_TOKENS_PER_CPU_SECOND[size.name] / tokens_per_batch
        estimated_steps = max(1, int(steps))
        epochs = 1000
    else:
        epochs = int(min(30, max(3, math.ceil(TARGET_STEPS / steps_per_epoch))))
        estimated_steps = epochs * steps_per_epoch
    return TrainingPlan(
        vocab_size=choose_vocab_size(stats),
        model=size.name,
        num_layers=size.num_layers,
        d_model=size.d_model,
        num_heads=size.num_heads,
        dff=size.dff,
        dropout=0.1,
        label_smoothing=0.1,
        batch_size=batch_size,
        max_length=choose_max_length(stats),
        peak_learning_rate=peak_learning_rate(size.d_model),
        warmup_steps=choose_warmup(estimated_steps),
        estimated_steps=estimated_steps,
        epochs=epochs,
        budget_seconds=None if budget_seconds is None else float(budget_seconds),
    )
