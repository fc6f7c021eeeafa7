"""The recipes of `train`: one per kind of run (data, model, loss, evaluation, plots).

`recipe_name(config)` picks one: `translation` (encoder-decoder), `prefix` (decoder-only on
"source [SEP] target"), `it_referent` (`it-referent`, encoder or decoder-only), `sequence`
(encoder classifier on `reviews` / `imdb`), `dual_encoder`, or `masked_lm` (pre-training an
encoder, `PretrainConfig`). `load_data(config)` reads the examples every recipe takes.
"""

import dataclasses
import logging
import math
import os
import shutil
import time
import warnings
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import sacrebleu
import tensorflow as tf

from keras_transformer import data, models
from keras_transformer.choices import DATA_SIZED_TASKS, SEQUENCE_TASKS, TOKEN_TASKS
from keras_transformer.data.batching.classification import (
    array_dataset,
    classification_dataset,
    it_token_arrays,
)
from keras_transformer.data.batching.contrastive import pair_dataset
from keras_transformer.data.batching.masking import make_mlm_dataset
from keras_transformer.data.batching.prefix import prefix_dataset
from keras_transformer.data.tasks import it_referent
from keras_transformer.data.tasks.corpus import load_corpus, split_corpus
from keras_transformer.data.text.normalize import normalize_text
from keras_transformer.errors import UserInputError
from keras_transformer.inference import SentenceEncoder, Translator, retrieval_accuracy
from keras_transformer.inference.decoding import (
    BLEU_ORDER,
    CANDIDATES,
    CHOICE_PAIRS,
    GREEDY,
    choose_decoding,
    short_references,
    validation_score,
)
from keras_transformer.inference.translator import PrefixTranslator
from keras_transformer.models.config import TransformerConfig
from keras_transformer.training.callbacks import set_stage
from keras_transformer.training.datasets import (
    check_full_batch,
    report_truncated,
    token_lengths,
    warn_if_truncated,
    with_known_length,
)
from keras_transformer.training.devices import use_xla
from keras_transformer.training.fine_tuning import build_fine_tuned_classifier, compare_fine_tuning
from keras_transformer.training.fitting import classifier_compile
from keras_transformer.training.planning import max_length_from_tokens
from keras_transformer.training.pretrain_config import OBJECTIVE, PretrainConfig
from keras_transformer.visualization import attention_maps
from keras_transformer.visualization.figures import plot_attention

logger = logging.getLogger(__name__)

__all__ = ["RECIPES", "Recipe", "load_data", "recipe_name"]


@dataclasses.dataclass
class Recipe:
    """What one architecture adds to the shared steps of `train`.

    Args:
        build: makes the model (inside the strategy's scope).
        train_ds, val_ds: `(inputs, labels)` batches.
        tokenizers: saved under `tokenizers/<name>/`.
        evaluate: `(model, fit) -> dict`, the figures of `metrics.json`.
        config_extra: more entries of `config.json`.
        loss, metrics: of `compile` (None: the package's masked loss and accuracy).
        learning_rate: a constant rate (None: the config's).
        plot: `(model, plots_dir) -> None`, figures besides the curves.
        sizes: config fields the recipe chose from its tokenized data (`max_length` from the
            measured pieces, the `vocab_size` learnt), applied to the run's config.
        prepare_evaluation: `model -> seconds`, before training: the evaluation's searches
            compiled and timed (an upper bound), kept from a time budget.
        remeasure_evaluation: `model -> seconds`, between epochs near a budget's end: the same
            estimate with the weights trained so far (`callbacks.TimeBudget`'s
            `update_reserve`).
        choose_weights: `(model, fit) -> dict`, right after training: the weights the run keeps
            (the model holds them after it), between the best checkpoint's and the last
            (`fitting.fit_run(keep_last=True)`); what it returns goes into `metrics.json`.
    """

    build: Callable[[], keras.Model]
    train_ds: tf.data.Dataset
    val_ds: tf.data.Dataset
    tokenizers: dict[str, data.WordPieceTokenizer]
    evaluate: Callable[[keras.Model, Any], dict]
    config_extra: dict
    loss: Any = None
    metrics: list | None = None
    learning_rate: float | None = None
    plot: Callable[[keras.Model, str], None] | None = None
    sizes: dict = dataclasses.field(default_factory=dict)
    prepare_evaluation: Callable[[keras.Model], float] | None = None
    remeasure_evaluation: Callable[[keras.Model], float] | None = None
    choose_weights: Callable[[keras.Model, Any], dict] | None = None
    test_batches: int = 0


EVAL_CHUNK = 128
"""Test sentences translated at once. On this 2-core CPU (XLA, after compiling), the 1000 test
sentences of the numbers task took 1.4 s in chunks of 128 and 3.5 s in one batch of 1024."""


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
"""A search's time re-measured between epochs (`Recipe.remeasure_evaluation`) is taken times
this margin, at most the upper bound measured before training: the final weights may decode
longer than those it was measured with, and one chunk stands for them all. With 1.25 a
ten-minute Anki en-de run ended 10 s past its budget (610 s; the other corpora 601-604 s)."""


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


BUDGET_TEST_TRANSLATIONS = 1000
"""With a time budget, the test pairs translated for BLEU and chrF (the loss and accuracy still
cover the whole split): the evaluation's time comes out of the budget, and 1,000 pairs rank runs
as the whole split does (docs/performance.md scores every run on 1,000 pairs)."""

EVALUATION_SHARE = 0.08
"""With a time budget, the largest share of it the evaluation's searches may take, as estimated
before training (`decoding_seconds`, an upper bound): where choosing the search and translating
the test pairs would take more (long sentences, a short budget), both use fewer pairs, at least
one chunk (`EVAL_CHUNK`) of validation pairs and two of test pairs. On the 20k-pair Europarl
file at 10 minutes the full evaluation took 110 s of the 600 (docs/performance.md)."""


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

    def whole_chunks(pairs: int) -> int:
        return pairs // EVAL_CHUNK * EVAL_CHUNK

    scale = allowed / seconds
    return (
        min(choice, max(EVAL_CHUNK, whole_chunks(int(choice * scale)))),
        min(test, max(2 * EVAL_CHUNK, whole_chunks(int(test * scale)))),
    )


def learn_vocabulary(config, texts: list[str], side: str) -> data.WordPieceTokenizer:
    """A WordPiece vocabulary of `config.vocab_size`; on a data-sized task (tsv), a learner that
    falls short tries again with rare pieces and one INFO line (`-v`) says why the size is
    smaller: the corpus has no more pieces, nothing a user needs to do."""
    fill = config.task in DATA_SIZED_TASKS
    tokenizer = data.WordPieceTokenizer.learn(texts, config.vocab_size, fill=fill)
    if fill and tokenizer.vocab_size < 0.95 * config.vocab_size:  # a note (-v): nothing to do
        logger.info(
            "%s: the corpus has only %d distinct pieces; vocabulary %d instead of %d",
            side,
            tokenizer.vocab_size,
            tokenizer.vocab_size,
            config.vocab_size,
        )
    return tokenizer


def fit_length(config, task: data.Task, tokenizers: dict) -> tuple[int, dict, dict]:
    """`max_length` (given, or chosen from the measured pieces: at most 1 % of the training
    pairs cut, and at most 1 % of the run's own test pairs, which evaluation translates), the
    sizes chosen, and pieces per word of each side (config.json).

    On a small corpus 1 % of the training pairs is none or one, and the few test sentences
    can be longer than every training one: a 287-pair file got `max_length` 16 from its
    training pairs, which cut 2 of its 12 test sentences."""
    texts = {"source": [s for s, _ in task.train], "target": [t for _, t in task.train]}
    lengths = {side: token_lengths(texts[side], tokenizers[side]) for side in texts}
    chosen = config.max_length is None
    sizes = {}
    if chosen:
        sizes["max_length"] = max_length_from_tokens(lengths["source"], lengths["target"])
        test = [
            token_lengths([pair[i] for pair in task.test], tokenizers[side])
            for i, side in enumerate(("source", "target"))
        ]
        whole_test = max_length_from_tokens(*test) if len(task.test) else 0
        if whole_test > sizes["max_length"]:
            logger.info(
                "max_length %d (the training pairs alone: %d) keeps the test sentences whole",
                whole_test,
                sizes["max_length"],
            )
            sizes["max_length"] = whole_test
    max_length = sizes.get("max_length", config.max_length)
    for side in texts:
        report_truncated(lengths[side], max_length, side=side, chosen=chosen)
    words = {side: sum(len(text.split()) for text in texts[side]) for side in texts}
    per_word = {side: round(float(lengths[side].sum()) / max(1, words[side]), 3) for side in texts}
    real = max(tokenizer.vocab_size for tokenizer in tokenizers.values())
    if config.vocab_size is not None and real < config.vocab_size:  # config.json tells the truth
        sizes["vocab_size"] = real
    return (
        max_length,
        sizes,
        {"pieces_per_word": per_word, "vocab_size_requested": config.vocab_size},
    )


def translation(config, task: data.Task, init=None) -> Recipe:
    """The paper's encoder-decoder; evaluated with `Translator`, the path `translate` serves.

    `init` (`init_from.load_run`): the tokenizers and weights of a translation run to continue."""
    if init is not None:
        source, target = init.tokenizers["source"], init.tokenizers["target"]
    else:
        source = learn_vocabulary(config, [s for s, _ in task.train], "source")
        target = learn_vocabulary(config, [t for _, t in task.train], "target")
    max_length, sizes, measured = fit_length(config, task, {"source": source, "target": target})
    config = dataclasses.replace(config, max_length=max_length)
    # XLA (and a TPU, which compiles every step) compiles a step per shape: pad to the buckets'
    # few lengths. Without it a shape is free, so each batch pads to its own longest pair
    # (1.22x target pieces a second on Europarl: docs/performance.md, "Padding to the batch").
    pad_to_bucket = use_xla(config.jit_compile) or config.strategy == "tpu"

    def dataset(pairs, training, drop_remainder=None):
        return data.make_dataset(
            pairs,
            source,
            target,
            batch_size=config.batch_size,
            max_length=config.max_length,
            shuffle=training,
            seed=config.seed,
            drop_remainder=training if drop_remainder is None else drop_remainder,
            pad_to_bucket=pad_to_bucket,
        )

    train_ds, tokens_per_epoch = with_known_length(dataset(task.train, True))
    if tokens_per_epoch == 0:  # small data: train on the incomplete batches instead
        warnings.warn(
            f"the {len(task.train)} training pairs fill no complete batch of --batch-size "
            f"{config.batch_size} (batches are grouped by length); training on incomplete "
            "batches. Lower --batch-size to silence this.",
            UserWarning,
            stacklevel=2,
        )
        train_ds, tokens_per_epoch = with_known_length(dataset(task.train, True, False))

    test_ds, _ = with_known_length(dataset(task.test, False))  # else Keras warns
    translators = {}  # one Translator: its search is compiled once (a budget probes it early)

    def translator(model):
        if "greedy" not in translators:
            translators["greedy"] = Translator(model, source, target, max_length=config.max_length)
        return translators["greedy"]

    choice_pairs = task.validation[:CHOICE_PAIRS]
    test_pairs = task.test
    if config.time_budget is not None:
        test_pairs = task.test[:BUDGET_TEST_TRANSLATIONS]

    def search(model, decoding):  # sources -> translations with one search
        chosen = translator(model)
        return lambda texts: chosen(texts, beam_size=decoding.beam_size, alpha=decoding.alpha)

    def evaluate(model, fit):
        decoding, record = GREEDY, None
        if choice_pairs:  # the search `translate` uses by default (decoding.json)
            decoding, record = choose_decoding(
                lambda texts, beam_size, alphas: translate_ranked_in_chunks(
                    translator(model), texts, beam_size, alphas
                ),
                choice_pairs,
            )
            translator(model).decoding = decoding
            logger.info("decoding chosen on the validation split: %s", decoding.describe())
        metrics = translation_metrics(
            model, test_ds, test_pairs, translator(model), tokens_per_epoch, fit
        )
        metrics["decoding"] = record or {"beam_size": 1, "alpha": 0.6, "chosen_on": None}
        metrics["test_translated"] = len(test_pairs)
        return metrics

    all_choice, all_test = choice_pairs, test_pairs
    untrained = {}  # Decoding -> seconds over all of `all_choice` (or `all_test`), untrained

    def planned_seconds(each: dict) -> float:
        """The evaluation's seconds from `each` search's seconds; under a budget, fewer pairs
        where they would take more than `EVALUATION_SHARE` of it (an INFO line when that
        changes)."""
        nonlocal choice_pairs, test_pairs
        if not all_choice:
            return each[GREEDY]

        def seconds(choice, test):  # per validation pair: two greedy searches to choose the
            # weights (`choose_weights`), then one search per beam size (its alphas only rank
            # the finished beams); per test pair, one
            per_choice = sum({d.beam_size: s for d, s in each.items()}.values()) + 2 * each[GREEDY]
            return (per_choice * choice + max(each.values()) * test) / len(all_choice)

        full = seconds(len(all_choice), len(all_test))
        choice, test = fit_evaluation(len(all_choice), len(all_test), full, config.time_budget)
        if (choice, test) != (len(choice_pairs), len(test_pairs)):
            if (choice, test) == (len(all_choice), len(all_test)):  # timed again: all fit
                logger.info(
                    "evaluation on all %d validation and %d test pairs: timed again, the "
                    "searches take about %.0f s",
                    choice,
                    test,
                    full,
                )
            else:
                logger.info(
                    "evaluation on %d validation and %d test pairs (of %d and %d): the "
                    "searches would take about %.0f s of the %.0f s budget",
                    choice,
                    test,
                    len(all_choice),
                    len(all_test),
                    full,
                    config.time_budget,
                )
        choice_pairs, test_pairs = all_choice[:choice], all_test[:test]
        return seconds(choice, test)

    def evaluation_seconds(model):
        """Seconds of the evaluation's searches, measured on a chunk of each (which compiles
        them); an upper bound, as an untrained model decodes every row to max_length."""
        if not all_choice:
            untrained[GREEDY] = decoding_seconds(search(model, GREEDY), [s for s, _ in all_test])
        else:  # every beam search of a size costs the same: alpha only ranks finished beams
            sources, by_beam = [s for s, _ in all_choice], {}
            for decoding in CANDIDATES:
                if decoding.beam_size not in by_beam:
                    by_beam[decoding.beam_size] = decoding_seconds(search(model, decoding), sources)
                untrained[decoding] = by_beam[decoding.beam_size]
        return planned_seconds(untrained)

    def remeasure_seconds(model):
        """`evaluation_seconds` with the weights trained so far, which stop decoding near the
        references' lengths: greedy search and one beam search timed again on the first
        chunk (every beam search of a size costs the same: alpha only ranks the finished
        beams), times `REMEASURE_MARGIN`, at most what was measured before training."""
        sources = [s for s, _ in (all_choice or all_test)][:EVAL_CHUNK]
        chunks = math.ceil(len(all_choice or all_test) / EVAL_CHUNK)
        timed = {}
        for decoding in untrained:
            key = decoding.beam_size
            if key not in timed:
                timed[key] = _timed(search(model, decoding), sources) * chunks
        each = {
            d: min(seconds, REMEASURE_MARGIN * timed[d.beam_size])
            for d, seconds in untrained.items()
        }
        return planned_seconds(each)

    def choose_weights(model, fit):
        """The checkpoint with the lowest validation loss (the model holds it) or the weights
        training ended with (`fit.last_weights`), whichever translates the first validation
        pairs better with greedy search: a label-smoothed loss that rises while BLEU still
        climbs (a small corpus seen many times) keeps the last. The chosen weights become
        `checkpoints/best.weights.h5`, which a resumed run loads."""
        if fit.last_weights is None:
            return {}
        if not choice_pairs:  # nothing to choose on: the lowest validation loss
            os.remove(fit.last_weights)
            return {}

        def greedy(texts):
            return translate_in_chunks(search(model, GREEDY), texts)

        metric, lowest = validation_score(greedy, choice_pairs)
        kept = model.get_weights()
        model.load_weights(fit.last_weights)
        _, last = validation_score(greedy, choice_pairs)
        if last > lowest:
            shutil.copyfile(fit.last_weights, fit.best_weights)
        else:
            model.set_weights(kept)
        os.remove(fit.last_weights)
        chosen = "last" if last > lowest else "lowest validation loss"
        logger.info(
            "weights kept: %s (greedy %s on %d validation pairs: %.2f with the lowest "
            "validation loss, %.2f with the last)",
            chosen,
            metric,
            len(choice_pairs),
            lowest,
            last,
        )
        return {
            "weights": {
                "chosen": chosen,
                "metric": metric,
                "lowest_validation_loss": lowest,
                "last": last,
                "chosen_on": f"the first {len(choice_pairs)} validation pairs, greedy search",
            }
        }

    def plot(model, plots_dir):
        sample = task.test[0][0]
        found = attention_maps.cross_attention(model, config.model, source, target, sample)
        plot_attention(**found._asdict(), path=os.path.join(plots_dir, "cross_attention.png"))

    vocab_sizes = {"source_vocab_size": source.vocab_size, "target_vocab_size": target.vocab_size}

    def build():
        model = models.build_transformer(**vocab_sizes, config=config.model)
        if init is not None:
            init.load_weights(model)
        return model

    return Recipe(
        build=build,
        train_ds=train_ds,
        val_ds=with_known_length(dataset(task.validation, False))[0],
        tokenizers={"source": source, "target": target},
        evaluate=evaluate,
        plot=plot,
        config_extra={**vocab_sizes, **measured},
        sizes=sizes,
        prepare_evaluation=evaluation_seconds,
        remeasure_evaluation=remeasure_seconds,
        choose_weights=choose_weights,
        test_batches=int(test_ds.cardinality()),
    )


def _joint_tokenizer(config, task: data.Task, why: str = ""):
    """One WordPiece vocabulary over both sides of the training pairs (which must fill a batch)."""
    texts = [s for s, _ in task.train] + [t for _, t in task.train]
    tokenizer = learn_vocabulary(config, texts, "joint")
    check_full_batch(len(task.train) >= config.batch_size, config, why)
    return tokenizer


def prefix(config, task: data.Task, init=None) -> Recipe:
    """A language model continuing `[START] source [SEP]` with the target; `init`: a decoder-only
    run to continue."""
    if init is not None:
        tokenizer = init.tokenizers["joint"]
        check_full_batch(len(task.train) >= config.batch_size, config)
    else:
        tokenizer = _joint_tokenizer(config, task)
    max_length, chosen, measured = fit_length(
        config, task, {"source": tokenizer, "target": tokenizer}
    )
    config = dataclasses.replace(config, max_length=max_length)
    sizes = dataclasses.replace(config.model, max_length=2 * config.max_length)  # source+target

    def dataset(pairs, training):
        return prefix_dataset(
            pairs,
            tokenizer,
            batch_size=config.batch_size,
            max_length=config.max_length,
            shuffle=training,
            seed=config.seed,
        )

    train_ds, tokens_per_epoch = with_known_length(dataset(task.train, True))
    test_ds, _ = with_known_length(dataset(task.test, False))  # else Keras warns
    translators = {}  # one PrefixTranslator: its search is compiled once

    def translator(model):
        if "greedy" not in translators:
            translators["greedy"] = PrefixTranslator(model, tokenizer, max_length=config.max_length)
        return translators["greedy"]

    def evaluate(model, fit):
        return translation_metrics(
            model, test_ds, task.test, translator(model), tokens_per_epoch, fit
        )

    def build():
        model = models.build_language_model(tokenizer.vocab_size, config=sizes)
        if init is not None:
            init.load_weights(model)
        return model

    return Recipe(
        build=build,
        train_ds=train_ds,
        val_ds=dataset(task.validation, False),
        tokenizers={"joint": tokenizer},
        evaluate=evaluate,
        config_extra={
            "joint_vocab_size": tokenizer.vocab_size,
            "sequence_length": sizes.max_length,
            **measured,
        },
        sizes=chosen,
        prepare_evaluation=lambda model: decoding_seconds(
            translator(model), [s for s, _ in task.test]
        ),
        test_batches=int(test_ds.cardinality()),
    )


def it_referent_recipe(config, task: data.Task, init=None) -> Recipe:
    """A token classifier read at "it": encoder (global) or decoder-only (causal)."""
    causal = config.architecture == "decoder-only"
    tokenizer = data.WordPieceTokenizer.learn([s for s, _ in task.train], config.vocab_size)
    arrays = {
        split: it_token_arrays(task.split(split), tokenizer, config.max_length)
        for split in ("train", "validation", "test")
    }

    def dataset(split, training):
        ids, labels, _ = arrays[split]
        return array_dataset(ids, labels, config.batch_size, shuffle=training, seed=config.seed)

    num_classes = 1 + len(it_referent.CLASS_NAMES)
    sentences = [s for s, _ in task.test]

    def evaluate(model, fit):
        ids, labels, positions = arrays["test"]
        logits = model.predict(ids, batch_size=config.batch_size, verbose=0)
        rows = np.arange(len(ids))
        predicted = logits[rows, positions, 1:].argmax(axis=-1)  # the "no label" logit dropped
        truth = labels[rows, positions] - 1
        speed = len(arrays["train"][0]) * fit.epochs_run / fit.seconds
        return {
            "test_accuracy": float((predicted == truth).mean()),
            "chance_accuracy": float(max(np.bincount(truth, minlength=2)) / len(truth)),
            "train_sentences_per_second": round(speed, 1),
            "samples": [
                {
                    "sentence": sentences[i],
                    "reference": task.test[i][1],
                    "prediction": it_referent.nouns(sentences[i])[int(predicted[i])],
                }
                for i in range(min(5, len(truth)))
            ],
        }

    def plot(model, plots_dir):
        found = attention_maps.it_attention(
            model, tokenizer, sentences[0], causal=causal, config=config.model
        )
        plot_attention(**found._asdict(), path=os.path.join(plots_dir, "it_attention.png"))

    return Recipe(
        build=lambda: models.build_token_classifier(
            tokenizer.vocab_size, num_classes, causal=causal, config=config.model
        ),
        train_ds=dataset("train", True),
        val_ds=dataset("validation", False),
        tokenizers={"source": tokenizer},
        evaluate=evaluate,
        plot=plot,
        config_extra={
            "source_vocab_size": tokenizer.vocab_size,
            "num_classes": num_classes,
            "class_names": list(it_referent.CLASS_NAMES),
        },
    )


def sequence(config, task: data.Task, init=None) -> Recipe:
    """An encoder classifier; `init` (a pre-training run) fixes the tokenizer and sizes."""
    class_names = sorted({label for _, label in task.train})
    sizes, pretrained = config.model, None
    if init is not None:
        pretrained, tokenizer, pretrain_config = init
        sizes = TransformerConfig.from_dict(pretrain_config)
        sizes = dataclasses.replace(sizes, dropout=config.dropout)
        logger.info("fine-tuning the encoder of %s: %s", config.init_from, sizes)
    else:
        tokenizer = data.WordPieceTokenizer.learn([s for s, _ in task.train], config.vocab_size)
    warn_if_truncated([s for s, _ in task.train], tokenizer, sizes.max_length)

    def dataset(pairs, training):
        return classification_dataset(
            pairs,
            tokenizer,
            class_names,
            batch_size=config.batch_size,
            max_length=sizes.max_length,
            seed=config.seed,
            shuffle=training,
        )

    transferred = []

    def build():
        model, copied = build_fine_tuned_classifier(
            tokenizer.vocab_size,
            len(class_names),
            sizes,
            pretrained=pretrained,
            freeze_embeddings=config.freeze_embeddings,
        )
        transferred.extend(copied)
        return model

    def evaluate(model, fit):
        test_ds = with_known_length(dataset(task.test, False))[0]
        test_loss, test_accuracy = model.evaluate(test_ds, verbose=0)
        counts = np.bincount([class_names.index(label) for _, label in task.test])
        return {
            "test_accuracy": float(test_accuracy),
            "test_loss": float(test_loss),
            "chance_accuracy": float(counts.max() / counts.sum()),
            "initialized_from": config.init_from,
            "transferred_layers": transferred,
            "samples": [],
        }

    return Recipe(
        build=build,
        train_ds=dataset(task.train, True),
        val_ds=dataset(task.validation, False),
        tokenizers={"source": tokenizer},
        evaluate=evaluate,
        config_extra={
            "source_vocab_size": tokenizer.vocab_size,
            "class_names": class_names,
            "model_sizes": {**sizes.to_dict()},
        },
        **classifier_compile(),
    )


def dual_encoder(config, task: data.Task, init=None) -> Recipe:
    """Sentence vectors from pairs that mean the same (in-batch negatives)."""
    tokenizer = _joint_tokenizer(config, task, " (a batch is the candidates)")

    def dataset(pairs, batch_size, training):
        return pair_dataset(
            pairs,
            tokenizer,
            batch_size=batch_size,
            max_length=config.max_length,
            shuffle=training,
            seed=config.seed,
        )

    def evaluate(model, fit):
        encoder = model.get_layer("sentence_encoder")
        search = SentenceEncoder(encoder, tokenizer, pooling="mean", max_length=config.max_length)
        sources, targets = [s for s, _ in task.test], [t for _, t in task.test]
        nearest = search.similarity(sources, targets).argmax(axis=1)
        return {  # the right translation among all the test translations, and the reverse
            "test_retrieval_accuracy_at_1": retrieval_accuracy(search, sources, targets),
            "test_reverse_retrieval_accuracy_at_1": retrieval_accuracy(search, targets, sources),
            "chance_accuracy": 1.0 / len(task.test),
            "samples": [
                {"query": sources[i], "reference": targets[i], "retrieved": targets[j]}
                for i, j in enumerate(nearest[:5].tolist())
            ],
        }

    return Recipe(
        build=lambda: models.build_dual_encoder(
            tokenizer.vocab_size, pooling="mean", config=config.model
        )[0],
        train_ds=dataset(task.train, config.batch_size, True),
        val_ds=dataset(task.validation, min(config.batch_size, len(task.validation)), False),
        tokenizers={"joint": tokenizer},
        evaluate=evaluate,
        config_extra={"joint_vocab_size": tokenizer.vocab_size, "pooling": "mean"},
        learning_rate=1e-3 if config.learning_rate is None else config.learning_rate,
        **classifier_compile("in_batch_accuracy"),
    )


def masked_lm(config: PretrainConfig, task: data.Task, init=None) -> Recipe:
    """BERT's masked-language-model pre-training of an encoder (new masks every epoch, on the
    texts of `task`, `load_data`'s corpus); the evaluation ends with the fine-tuning comparison
    (`compare_fine_tuning`) on `config.finetune_task`."""
    texts = {split: [text for text, _ in task.split(split)] for split in ("train", "validation")}
    tokenizer = data.WordPieceTokenizer.learn(texts["train"], config.vocab_size)

    def dataset(split):
        return make_mlm_dataset(
            texts[split],
            tokenizer,
            batch_size=config.batch_size,
            max_length=config.max_length,
            seed=config.seed,
            shuffle=split == "train",
            rate=config.mask_rate,
        )

    def evaluate(model, fit):
        scores = model.evaluate(dataset("validation"), verbose=0, return_dict=True)
        metrics = {
            "objective": OBJECTIVE,
            "validation_masked_loss": float(scores["loss"]),
            "validation_masked_accuracy": float(scores["masked_accuracy"]),
            "num_train_texts": len(texts["train"]),
        }
        if config.finetune_task is not None:
            set_stage("while fine-tuning (pre-training is done)")
            labelled = data.load_task(config.finetune_task, seed=config.seed)
            logger.info(
                "fine-tuning on %s (%d labelled training texts), from the pre-trained encoder "
                "and from scratch",
                labelled.name,
                len(labelled.train),
            )
            metrics["fine_tuning"] = compare_fine_tuning(
                model,
                tokenizer,
                labelled,
                config.model,
                epochs=config.finetune_epochs,
                batch_size=config.finetune_batch_size,
                learning_rate=config.finetune_learning_rate,
                seed=config.seed,
            )
        return metrics

    return Recipe(
        build=lambda: models.build_masked_language_model(tokenizer.vocab_size, config=config.model),
        train_ds=dataset("train"),
        val_ds=dataset("validation"),
        tokenizers={"source": tokenizer},
        evaluate=evaluate,
        config_extra={
            "objective": OBJECTIVE,
            "source_vocab_size": tokenizer.vocab_size,
            "num_train_texts": len(texts["train"]),
            "num_validation_texts": len(texts["validation"]),
        },
    )


RECIPES: dict[str, Callable[..., Recipe]] = {
    "translation": translation,
    "prefix": prefix,
    "it_referent": it_referent_recipe,
    "sequence": sequence,
    "dual_encoder": dual_encoder,
    "masked_lm": masked_lm,
}
"""The recipe of each kind of run (`recipe_name(config)` picks one)."""


def recipe_name(config) -> str:
    """The `RECIPES` key of a `TrainConfig` (a `PretrainConfig`: `masked_lm`)."""
    if isinstance(config, PretrainConfig):
        return "masked_lm"
    if config.task in TOKEN_TASKS:
        return "it_referent"
    if config.task in SEQUENCE_TASKS:
        return "sequence"
    names = {"encoder-decoder": "translation", "dual-encoder": "dual_encoder"}
    return names.get(config.architecture, "prefix")


def load_data(config) -> data.Task:
    """The examples of a run, read and checked before any file is written: the task's three
    splits (none may be empty), or for pre-training the corpus split into training and
    validation texts (`Task` pairs `(text, "")`, no test split)."""
    if isinstance(config, PretrainConfig):
        texts = load_corpus(config.corpus, num_sentences=config.num_sentences, seed=config.seed)
        train, validation = split_corpus(texts, config.validation_fraction, config.seed)
        logger.info(
            "corpus %s: %d training, %d validation texts",
            config.corpus,
            len(train),
            len(validation),
        )
        pairs = {
            name: [(text, "") for text in part]
            for name, part in (("train", train), ("validation", validation))
        }
        return data.Task(config.corpus, None, None, **pairs, test=[])
    task = data.load_task(config.task, **config.task_options())
    for split in ("train", "validation", "test"):
        if not task.split(split):
            raise UserInputError(
                f"task {task.name!r} has an empty {split} split; every run needs "
                f"training, validation and test examples (raise --num-{split})."
            )
    logger.info(
        "task %s: %d train, %d validation, %d test examples",
        task.name,
        len(task.train),
        len(task.validation),
        len(task.test),
    )
    return task
