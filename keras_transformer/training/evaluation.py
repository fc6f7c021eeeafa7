"""How a translation run is evaluated: the search chosen, decoding budgeted, BLEU and chrF.

`translation_metrics` scores the test pairs (loss and accuracy, then the translations: exact
match, BLEU where it means something (`bleu_score`), chrF, length ratio). Under a time budget the
searches come out of it: `EvaluationPairs` times them before training (`decoding_seconds`, an
upper bound) and again near the end, and keeps the validation pairs the search is chosen on and
the test pairs translated within `EVALUATION_SHARE` of the budget (`fit_evaluation`).
"""

import logging
import math
import time
from collections.abc import Callable

import numpy as np
import sacrebleu

from keras_transformer.data.text.normalize import normalize_text
from keras_transformer.inference.decoding import BLEU_ORDER, CANDIDATES, GREEDY, short_references

logger = logging.getLogger(__name__)

__all__ = [
    "EvaluationPairs",
    "bleu_score",
    "decoding_seconds",
    "fit_evaluation",
    "translate_in_chunks",
    "translation_metrics",
]

EVAL_CHUNK = 128
"""Test sentences translated at once (one compiled search for them all; docs/performance.md)."""


def translate_in_chunks(translate: Callable[[list[str]], list[str]], sources) -> list[str]:
    """`translate` over `sources`, `EVAL_CHUNK` at a time (one compiled search for them all)."""
    chunks = range(0, len(sources), EVAL_CHUNK)
    return [text for i in chunks for text in translate(list(sources[i : i + EVAL_CHUNK]))]


def translate_ranked_in_chunks(translator, sources, beam_size: int, alphas) -> list[list[str]]:
    """`translator.translate_ranked` over `sources`, `EVAL_CHUNK` at a time: one search of each
    chunk, one list of translations per alpha."""
    chunks = [
        translator.translate_ranked(list(sources[i : i + EVAL_CHUNK]), beam_size, alphas)
        for i in range(0, len(sources), EVAL_CHUNK)
    ]
    return [[text for chunk in chunks for text in chunk[j]] for j in range(len(alphas))]


def _timed(translate: Callable[[list[str]], list[str]], chunk: list[str]) -> float:
    """Seconds of one `translate(chunk)`, its long-input warnings silenced."""
    inference_logger = logging.getLogger("keras_transformer.inference")
    level = inference_logger.level
    inference_logger.setLevel(logging.ERROR)  # the evaluation warns of long inputs, once
    try:
        start = time.perf_counter()
        translate(chunk)
        return time.perf_counter() - start
    finally:
        inference_logger.setLevel(level)


def decoding_seconds(translate: Callable[[list[str]], list[str]], sources) -> float:
    """Estimated seconds of `translate_in_chunks(translate, sources)`, measured: one chunk
    compiles the search (which the evaluation then reuses), a second one is timed. An untrained
    model decodes every row to `max_length`, so this is an upper bound."""
    chunk = list(sources[:EVAL_CHUNK])
    if not chunk:
        return 0.0
    _timed(translate, chunk)  # compiles
    return _timed(translate, chunk) * math.ceil(len(sources) / EVAL_CHUNK)


REMEASURE_MARGIN = 1.5
"""A search's time re-measured between epochs (`EvaluationPairs.remeasure`) is taken times this
margin, at most the upper bound measured before training: the final weights may decode longer
than those it was measured with, and one chunk stands for them all (docs/performance.md)."""


def bleu_score(predictions: list[str], references: list[str]) -> dict:
    """`{"test_bleu": score}`, or, where BLEU means nothing, `{"test_bleu": None,
    "test_bleu_left_out": why}`.

    BLEU is a geometric mean over 1- to 4-gram precisions: when most references are shorter
    than 4 words (the numbers task's one-word German or Kannada numbers), a perfect translation
    scores 0.0. Then it is left out, and chrF (character n-grams) and exact match say how good
    the translations are.

    Example:
    >>> bleu_score(["dreihundert", "vierzig"], ["dreihundert", "vierzig"])["test_bleu"] is None
    True
    >>> round(bleu_score(["a b c d e"], ["a b c d e"])["test_bleu"], 1)
    100.0
    """
    short = short_references(references)
    if references and short > len(references) / 2:
        return {
            "test_bleu": None,
            "test_bleu_left_out": (
                f"{short} of the {len(references)} test references are shorter than "
                f"{BLEU_ORDER} words, and BLEU counts {BLEU_ORDER}-word sequences (a perfect "
                "translation of one word scores 0); see test_chrf and test_exact_match"
            ),
        }
    return {"test_bleu": float(sacrebleu.corpus_bleu(predictions, [references]).score)}


def translation_metrics(model, test_ds, test_pairs, translate, tokens_per_epoch, fit) -> dict:
    """Test scores of a translation run; `translate(sources)` gives the predictions.

    References are normalised (`normalize_text`) so a decomposed one (Kannada) can match.
    `test_length_ratio` is the words of the translations over those of the references (below 1:
    the model under-generates, which BLEU's brevity penalty charges)."""
    scores = model.evaluate(test_ds, verbose=0, return_dict=True)
    sources = [s for s, _ in test_pairs]
    references = [normalize_text(t) for _, t in test_pairs]
    predictions = translate_in_chunks(translate, sources)
    pairs = list(zip(sources, references, predictions, strict=True))
    words = sum(len(reference.split()) for reference in references)
    return {
        "test_exact_match": float(np.mean([p == r for _, r, p in pairs])),
        "test_token_accuracy": float(scores["masked_accuracy"]),
        "test_loss": float(scores["loss"]),
        **bleu_score(predictions, references),
        "test_chrf": float(sacrebleu.corpus_chrf(predictions, [references]).score),
        "test_length_ratio": round(sum(len(p.split()) for p in predictions) / max(words, 1), 4),
        "train_tokens_per_second": round(tokens_per_epoch * fit.epochs_run / fit.seconds, 1),
        "samples": [{"source": s, "reference": r, "prediction": p} for s, r, p in pairs[:5]],
    }


EVALUATION_SHARE = 0.08
"""With a time budget, the largest share of it the evaluation's searches may take, as estimated
before training (`decoding_seconds`, an upper bound): where choosing the search and translating
the test pairs would take more, both use fewer pairs, at least one chunk (`EVAL_CHUNK`) of
validation pairs and two of test pairs (docs/performance.md)."""


def fit_evaluation(choice: int, test: int, seconds: float, budget: float | None) -> tuple[int, int]:
    """`(choice, test)` pairs to score, scaled down by one factor where the evaluation's estimated
    `seconds` exceed `EVALUATION_SHARE` of `budget` (None: no budget, nothing scaled).

    Scaled counts are whole chunks (`EVAL_CHUNK`): a smaller last chunk is a new batch size,
    which the compiled search would compile again, after the budget's reserve was timed.

    Example:
    >>> fit_evaluation(500, 1000, 30.0, 600.0)  # 5 % of the budget: kept
    (500, 1000)
    >>> fit_evaluation(500, 1000, 96.0, 600.0)  # 16 %: halved (250, 500), in whole chunks
    (128, 384)
    >>> fit_evaluation(500, 1000, 960.0, 600.0)  # the floors: a chunk, and two
    (128, 256)
    """
    allowed = None if budget is None else EVALUATION_SHARE * budget
    if allowed is None or seconds <= allowed:
        return choice, test
    scale = allowed / seconds
    return (
        min(choice, max(EVAL_CHUNK, _whole_chunks(int(choice * scale)))),
        min(test, max(2 * EVAL_CHUNK, _whole_chunks(int(test * scale)))),
    )


def _whole_chunks(pairs: int) -> int:
    return pairs // EVAL_CHUNK * EVAL_CHUNK


Search = Callable[[object], Callable[[list[str]], list[str]]]
"""`search(decoding)`: the function translating sources with that search."""


class EvaluationPairs:
    """The validation pairs a translation run chooses its search (and weights) on, and the test
    pairs it translates; under a time budget, as many of both as the searches can score within
    `EVALUATION_SHARE` of it.

    Args:
        choice: validation pairs the search is chosen on (none: greedy search).
        test: test pairs translated.
        budget: the run's time budget in seconds, or None.
    """

    def __init__(self, choice: list, test: list, budget: float | None):
        self.all_choice, self.all_test, self.budget = list(choice), list(test), budget
        self.choice, self.test = self.all_choice, self.all_test
        self.untrained: dict = {}  # Decoding -> seconds over all the pairs, untrained

    def measure(self, search: Search) -> float:
        """Seconds of the evaluation's searches, measured on a chunk of each (which compiles
        them); an upper bound, as an untrained model decodes every row to max_length."""
        if not self.all_choice:
            sources = [s for s, _ in self.all_test]
            self.untrained[GREEDY] = decoding_seconds(search(GREEDY), sources)
        else:  # every beam search of a size costs the same: alpha only ranks finished beams
            sources, by_beam = [s for s, _ in self.all_choice], {}
            for decoding in CANDIDATES:
                if decoding.beam_size not in by_beam:
                    by_beam[decoding.beam_size] = decoding_seconds(search(decoding), sources)
                self.untrained[decoding] = by_beam[decoding.beam_size]
        return self._fit(self.untrained)

    def remeasure(self, search: Search) -> float:
        """`measure` with the weights trained so far, which stop decoding near the references'
        lengths: greedy search and one beam search timed again on the first chunk, times
        `REMEASURE_MARGIN`, at most what was measured before training."""
        pairs = self.all_choice or self.all_test
        sources = [s for s, _ in pairs][:EVAL_CHUNK]
        chunks = math.ceil(len(pairs) / EVAL_CHUNK)
        timed = {}
        for decoding in self.untrained:
            if decoding.beam_size not in timed:
                timed[decoding.beam_size] = _timed(search(decoding), sources) * chunks
        each = {
            d: min(seconds, REMEASURE_MARGIN * timed[d.beam_size])
            for d, seconds in self.untrained.items()
        }
        return self._fit(each)

    def _fit(self, each: dict) -> float:
        """The evaluation's seconds from `each` search's; under a budget, fewer pairs where they
        would take more than `EVALUATION_SHARE` of it (an INFO line when that changes)."""
        if not self.all_choice:
            return each[GREEDY]
        full = self._seconds(each, len(self.all_choice), len(self.all_test))
        counts = fit_evaluation(len(self.all_choice), len(self.all_test), full, self.budget)
        if counts != (len(self.choice), len(self.test)):
            self._log(counts, full)
        self.choice, self.test = self.all_choice[: counts[0]], self.all_test[: counts[1]]
        return self._seconds(each, *counts)

    def _seconds(self, each: dict, choice: int, test: int) -> float:
        # per validation pair: two greedy searches to choose the weights, then one search per
        # beam size (its alphas only rank the finished beams); per test pair, one
        per_choice = sum({d.beam_size: s for d, s in each.items()}.values()) + 2 * each[GREEDY]
        return (per_choice * choice + max(each.values()) * test) / len(self.all_choice)

    def _log(self, counts: tuple[int, int], full: float) -> None:
        if counts == (len(self.all_choice), len(self.all_test)):  # timed again: all fit
            logger.info(
                "evaluation on all %d validation and %d test pairs: timed again, the "
                "searches take about %.0f s",
                *counts,
                full,
            )
        else:
            logger.info(
                "evaluation on %d validation and %d test pairs (of %d and %d): the "
                "searches would take about %.0f s of the %.0f s budget",
                *counts,
                len(self.all_choice),
                len(self.all_test),
                full,
                self.budget,
            )
