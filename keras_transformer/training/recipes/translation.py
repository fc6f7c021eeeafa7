"""The paper's encoder-decoder, evaluated with `Translator`, the path `translate` serves."""

import functools
import logging
import os
import shutil
import warnings

import keras

from keras_transformer import data, models
from keras_transformer.inference import Translator, resolve_jit_compile
from keras_transformer.inference.decoding import (
    CHOICE_PAIRS,
    GREEDY,
    choose_decoding,
    validation_score,
)
from keras_transformer.training.datasets import token_lengths, with_known_length
from keras_transformer.training.evaluation import (
    EvaluationPairs,
    translate_in_chunks,
    translate_ranked_in_chunks,
    translation_metrics,
)
from keras_transformer.training.plan import Batches
from keras_transformer.training.recipes.base import Recipe, learn_vocabulary
from keras_transformer.visualization import attention_maps
from keras_transformer.visualization.figures import plot_attention

logger = logging.getLogger(__name__)


class TranslationRecipe(Recipe):
    """Source -> target with the encoder-decoder; `init` (`init_from.load_run`): the tokenizers
    and weights of a translation run to continue.

    After training it keeps, of the best checkpoint and the last weights, those that translate
    the first validation pairs better (`choose_weights`), chooses the search `translate` uses
    on them (`decoding.json`) and scores the test pairs (`evaluation.translation_metrics`)."""

    KEEPS_LAST = True
    REMEASURES = True
    _translator = None  # `translator`'s, made once

    @functools.cached_property
    def pairs(self) -> EvaluationPairs:
        """The validation pairs the search is chosen on and the test pairs translated."""
        plan, task = self.plan, self.task
        test = task.test[: plan.test_translations] if plan.test_translations else task.test
        return EvaluationPairs(task.validation[:CHOICE_PAIRS], test, plan.time_budget)

    @staticmethod
    def vocabularies(settings, task, init, vocab_size):
        if init is not None:
            return {side: init.tokenizers[side] for side in ("source", "target")}
        return {
            side: learn_vocabulary(
                [pair[i] for pair in task.train], side, vocab_size, task=settings.task
            )
            for i, side in enumerate(("source", "target"))
        }

    @staticmethod
    def make_batches(settings, task, tokenizers, max_length, pad_to_bucket):
        # XLA (and a TPU, which compiles every step) compiles a step per shape: pad to the
        # buckets' few lengths. Without it a shape is free, so each batch pads to its own
        # longest pair (docs/performance.md, "Padding to the batch").
        def dataset(pairs, training, drop_remainder=None):
            return data.make_dataset(
                pairs,
                tokenizers["source"],
                tokenizers["target"],
                batch_size=settings.batch_size,
                max_length=max_length,
                shuffle=training,
                seed=settings.seed,
                drop_remainder=training if drop_remainder is None else drop_remainder,
                pad_to_bucket=pad_to_bucket,
            )

        train, tokens = with_known_length(dataset(task.train, True))
        if tokens == 0:  # small data: train on the incomplete batches instead
            warnings.warn(
                f"the {len(task.train)} training pairs fill no complete batch of --batch-size "
                f"{settings.batch_size} (batches are grouped by length); training on incomplete "
                "batches. Lower --batch-size to silence this.",
                UserWarning,
                stacklevel=2,
            )
            train, tokens = with_known_length(dataset(task.train, True, False))
        validation = with_known_length(dataset(task.validation, False))[0]
        test = with_known_length(dataset(task.test, False))[0]  # else Keras warns
        return Batches(train, validation, test, tokens)

    def build(self) -> keras.Model:
        model = models.build_transformer(**self._vocab_sizes(), config=self.plan.model)
        if self.start_weights is not None:
            self.start_weights.load_weights(model)
        return model

    def _vocab_sizes(self) -> dict:
        return {
            f"{side}_vocab_size": self.tokenizers[side].vocab_size for side in ("source", "target")
        }

    def config_extra(self) -> dict:
        return {**self._vocab_sizes(), **self.plan.measured}

    def translator(self, model) -> Translator:
        """One `Translator` of `model`: its search is compiled once (a budget probes it early),
        with XLA unless the pairs it translates are few (`resolve_jit_compile`)."""
        if self._translator is None:
            source, target = self.tokenizers["source"], self.tokenizers["target"]
            texts = len(self.pairs.all_choice) + len(self.pairs.all_test)
            xla = resolve_jit_compile("auto", texts=texts)
            self._translator = Translator(
                model, source, target, max_length=self.plan.max_length, jit_compile=xla
            )
        return self._translator

    def search(self, model):
        """`decoding -> (sources -> translations)` with that search."""
        translator = self.translator(model)
        return lambda d: lambda texts: translator(texts, beam_size=d.beam_size, alpha=d.alpha)

    def prepare_evaluation(self, model) -> float:
        return self.pairs.measure(self.search(model))

    def remeasure_evaluation(self, model) -> float:
        return self.pairs.remeasure(self.search(model))

    def evaluate(self, model, fit) -> dict:
        decoding, record = GREEDY, None
        translator = self.translator(model)
        if self.pairs.choice:  # the search `translate` uses by default (decoding.json)
            decoding, record = choose_decoding(
                lambda texts, beam_size, alphas: translate_ranked_in_chunks(
                    translator, texts, beam_size, alphas
                ),
                self.pairs.choice,
            )
            translator.decoding = decoding
            logger.info("decoding chosen on the validation split: %s", decoding.describe())
        test = self.pairs.test
        tokens = self.batches.tokens_per_epoch
        metrics = translation_metrics(model, self.batches.test, test, translator, tokens, fit)
        metrics["decoding"] = record or {"beam_size": 1, "alpha": 0.6, "chosen_on": None}
        metrics["test_translated"] = len(test)
        # max_length comes from the training and validation pairs, never the test split: a
        # longer test source is cut when translated (the translator warns) and counted here.
        lengths = token_lengths([s for s, _ in test], self.tokenizers["source"])
        metrics["test_sources_truncated"] = int((lengths > self.plan.max_length - 2).sum())
        return metrics

    def choose_weights(self, model, fit) -> dict:
        """The checkpoint with the lowest validation loss (the model holds it) or the weights
        training ended with (`fit.last_weights`), whichever translates the first validation
        pairs better with greedy search: a label-smoothed loss that rises while BLEU still
        climbs (a small corpus seen many times) keeps the last. The chosen weights become
        `checkpoints/best.weights.h5`, which a resumed run loads."""
        if fit.last_weights is None:
            return {}
        pairs = self.pairs.choice
        if not pairs:  # nothing to choose on: the lowest validation loss
            os.remove(fit.last_weights)
            return {}
        greedy_search = self.search(model)(GREEDY)

        def greedy(texts):
            return translate_in_chunks(greedy_search, texts)

        metric, lowest = validation_score(greedy, pairs)
        kept = model.get_weights()
        model.load_weights(fit.last_weights)
        _, last = validation_score(greedy, pairs)
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
            len(pairs),
            lowest,
            last,
        )
        return {
            "weights": {
                "chosen": chosen,
                "metric": metric,
                "lowest_validation_loss": lowest,
                "last": last,
                "chosen_on": f"the first {len(pairs)} validation pairs, greedy search",
            }
        }

    def plot(self, model, plots_dir) -> None:
        source, target = self.tokenizers["source"], self.tokenizers["target"]
        sample = self.task.test[0][0]
        found = attention_maps.cross_attention(model, self.plan.model, source, target, sample)
        plot_attention(**found._asdict(), path=os.path.join(plots_dir, "cross_attention.png"))
