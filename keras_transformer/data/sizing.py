"""What a parallel corpus is: its statistics, and the vocabulary and length it needs.

Pure functions (no TensorFlow). `corpus_stats(pairs)` measures a parallel corpus;
`choose_vocab_size` and `choose_max_length` derive the data sizes of a run from it. The plan of
the run (model, schedule, epochs) is `training.planning`'s; the measurements behind both rules
are in docs/performance.md ("Sizing a run from its corpus").

**Vocabulary** (`choose_vocab_size`): a WordPiece vocabulary for each side, of
`8000 * sqrt(words / 700_000)` pieces (`words` counts both sides), rounded to 500 and kept in
[1000, 32000]: smaller vocabularies for less data (Sennrich & Zhang, 2019). The plan then caps it
by what the model can afford (`training.planning.plan_vocab_size`).

**Length** (`max_length_from_tokens`): once the vocabularies are learnt, the measured pieces
of the training pairs decide: the smallest length, rounded up to 8 and kept in [16, 256], that
frames both sides (`[START]`/`[END]` included) of all but `MAX_TRUNCATED` (1 %) of the pairs.
Before that (a plan, or a run without tokenizers), `choose_max_length` estimates it from words:
the 99th percentile of words per sentence on the longer side, times `PIECES_PER_WORD`, plus 2.

Example:

>>> pairs = [("a small house", "ein kleines Haus"), ("the house", "das Haus")] * 50
>>> stats = corpus_stats(pairs)
>>> stats.num_pairs, stats.mean_source_words
(100, 2.5)
>>> choose_vocab_size(stats), choose_max_length(stats)
(1000, 16)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

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
    """Target tokens of the corpus: 1.5 pieces per word, plus one `[END]` per pair."""
    return stats.target_words * PIECES_PER_WORD + stats.num_pairs  # + [END]


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
