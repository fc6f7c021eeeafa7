"""The search a run translates with by default, chosen on its validation split.

Beam search finds translations greedy search misses, and its length penalty `alpha` decides
how long they come out; which of them scores best depends on the model and the corpus. So
`train` tries `CANDIDATES` on the first `CHOICE_PAIRS` validation pairs once training ends
(`choose_decoding`) and writes the winner to `<run_dir>/decoding.json`; `Translator.from_run_dir`,
`keras-transformer translate` and `export` use it unless told otherwise (`--beam-size`,
`--alpha`). A run without the file (trained before 0.2.1, or not a translation run) searches
greedily.

Measured (docs/performance.md, "Decoding chosen on the validation split"): on the Anki
English-Spanish file after 6 passes of the 2 x 64 model, 1,000 validation pairs scored
24.0 BLEU greedy, 26.3 with 4 beams at alpha 0.6 and 26.5 at alpha 1.0.

Example:

>>> score = {Decoding(1, 0.6): 20.0, Decoding(4, 0.6): 21.0, Decoding(4, 1.0): 21.0}
>>> best_decoding(score)
Decoding(beam_size=4, alpha=0.6)
>>> Decoding(4, 1.0).describe()
'beam search (4 beams, alpha 1)'
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import NamedTuple

from keras_transformer.runs import DECODING_FILE  # where a run keeps its chosen search

CHOICE_PAIRS = 500
"""Validation pairs the candidates are scored on: enough that a point of BLEU is not noise
(1,000 pairs gave the same order as 500 on the Anki files), few enough to cost seconds."""


class Decoding(NamedTuple):
    """A search: `beam_size` 1 is greedy search (`alpha` is then unused)."""

    beam_size: int = 1
    alpha: float = 0.6

    def describe(self) -> str:
        """In words, as the commands print it."""
        if self.beam_size == 1:
            return "greedy search"
        return f"beam search ({self.beam_size} beams, alpha {self.alpha:g})"


BLEU_ORDER = 4
"""BLEU's longest n-gram (sacrebleu's default): a reference shorter than this has none."""


def short_references(references: Sequence[str]) -> int:
    """How many `references` are shorter than `BLEU_ORDER` words: where they are most, BLEU
    means nothing (a perfect one-word translation scores 0) and chrF decides."""
    return sum(len(reference.split()) < BLEU_ORDER for reference in references)


GREEDY = Decoding(1, 0.6)
"""What a translator without a chosen search uses."""

CANDIDATES = (GREEDY, Decoding(4, 0.6), Decoding(4, 1.0), Decoding(4, 1.4))
"""What `choose_decoding` tries, cheapest first (a tie keeps the cheaper)."""


def best_decoding(scores: dict[Decoding, float]) -> Decoding:
    """The highest-scoring search; among equal scores the first (the cheapest, in
    `CANDIDATES` order)."""
    best = None
    for decoding, score in scores.items():
        if best is None or score > scores[best]:
            best = decoding
    if best is None:
        raise ValueError("best_decoding needs at least one scored search")
    return best


def validation_score(
    translate: Callable[[list[str]], list[str]], pairs: Sequence[tuple[str, str]]
) -> tuple[str, float]:
    """`(metric, score)` of `translate(sources)` against the references of `pairs`: corpus BLEU
    (sacrebleu), or chrF where most references are shorter than four words and BLEU means
    nothing (`training.evaluation.bleu_score`); rounded to 2 decimals.

    >>> validation_score(lambda texts: texts, [("a b c d e", "a b c d e")])
    ('BLEU', 100.0)
    """
    import sacrebleu

    from keras_transformer.data.text.normalize import normalize_text

    sources = [source for source, _ in pairs]
    references = [normalize_text(target) for _, target in pairs]
    metric = "chrF" if short_references(references) > len(references) / 2 else "BLEU"
    score_of = sacrebleu.corpus_chrf if metric == "chrF" else sacrebleu.corpus_bleu
    return metric, round(float(score_of(translate(sources), [references]).score), 2)


def choose_decoding(
    translate: Callable[[list[str], int, list[float]], list[list[str]]],
    pairs: Sequence[tuple[str, str]],
    candidates: Sequence[Decoding] = CANDIDATES,
) -> tuple[Decoding, dict]:
    """Scores each candidate on `pairs` and returns the best with a record for `decoding.json`.

    The score is corpus BLEU (sacrebleu) unless most references are shorter than four words,
    where BLEU means nothing (`training.evaluation.bleu_score`); then chrF. The candidates of one
    beam size share one search: alpha only ranks its finished beams
    (`Translator.translate_ranked`).

    Args:
        translate: `(sources, beam_size, alphas) -> one list of translations per alpha`.
        pairs: (source, reference) validation pairs.
        candidates: the searches to try, cheapest first.

    Returns:
        `(decoding, record)`; `record` names the metric, the pairs and every candidate's score.
    """
    if not pairs:
        raise ValueError("choose_decoding needs validation pairs; the validation split is empty")
    sources = [source for source, _ in pairs]
    by_beam: dict[int, list[float]] = {}
    for decoding in candidates:
        by_beam.setdefault(decoding.beam_size, []).append(decoding.alpha)
    outputs = {}
    for beam_size, alphas in by_beam.items():
        for alpha, translations in zip(alphas, translate(sources, beam_size, alphas), strict=True):
            outputs[Decoding(beam_size, alpha)] = translations
    scores, metric = {}, None
    for decoding in candidates:
        decoding = Decoding(*decoding)
        metric, scores[decoding] = validation_score(lambda _, d=decoding: outputs[d], pairs)
    chosen = best_decoding(scores)
    record = {
        "beam_size": chosen.beam_size,
        "alpha": chosen.alpha,
        "chosen_on": f"the first {len(pairs)} validation pairs",
        "metric": metric,
        "scores": [
            {"beam_size": d.beam_size, "alpha": d.alpha, metric: s} for d, s in scores.items()
        ],
    }
    return chosen, record


def save_decoding(run_dir: str | os.PathLike, record: dict) -> str:
    """Writes `record` (from `choose_decoding`) to `<run_dir>/decoding.json`; returns its path."""
    path = os.path.join(run_dir, DECODING_FILE)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=1)
    return path


def load_decoding(run_dir: str | os.PathLike) -> Decoding | None:
    """The run's chosen search, or None when it has no `decoding.json` (an older run).

    Raises:
        UserInputError: the file exists but is not a search (names the file and the fix).
    """
    from keras_transformer.errors import UserInputError

    path = os.path.join(run_dir, DECODING_FILE)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
        beam_size, alpha = record["beam_size"], float(record["alpha"])
        if not isinstance(beam_size, int) or beam_size < 1 or not alpha >= 0:
            raise ValueError(f"beam_size {beam_size!r}, alpha {alpha!r}")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UserInputError(
            f"{path} is damaged ({type(error).__name__}: {error}); delete it to translate "
            "greedily, or pass --beam-size and --alpha."
        ) from None
    return Decoding(beam_size, alpha)
