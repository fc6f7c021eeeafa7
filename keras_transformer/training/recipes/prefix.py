"""A language model that translates by continuing `[START] source [SEP]` with the target."""

from keras_transformer import models
from keras_transformer.data.batching.prefix import prefix_dataset
from keras_transformer.inference.translator import PrefixTranslator, resolve_jit_compile
from keras_transformer.training.datasets import check_full_batch, with_known_length
from keras_transformer.training.evaluation import decoding_seconds, translation_metrics
from keras_transformer.training.plan import Batches
from keras_transformer.training.recipes.base import Recipe, joint_tokenizer


class PrefixRecipe(Recipe):
    """Decoder-only translation on "source [SEP] target"; `init`: a decoder-only run to
    continue. The model's positions hold both sides (`plan.model.max_length`)."""

    def __init__(self, plan, task, init, tokenizers, batches):
        super().__init__(plan, task, init, tokenizers, batches)
        self._translator = None

    @staticmethod
    def vocabularies(settings, task, init, vocab_size):
        if init is not None:
            check_full_batch(len(task.train) >= settings.batch_size, settings)
            return {"joint": init.tokenizers["joint"]}
        return {"joint": joint_tokenizer(settings, task, vocab_size)}

    @staticmethod
    def make_batches(settings, task, tokenizers, max_length, pad_to_bucket):
        def dataset(pairs, training):
            return prefix_dataset(
                pairs,
                tokenizers["joint"],
                batch_size=settings.batch_size,
                max_length=max_length,
                shuffle=training,
                seed=settings.seed,
            )

        train, tokens = with_known_length(dataset(task.train, True))
        test = with_known_length(dataset(task.test, False))[0]  # else Keras warns
        return Batches(train, dataset(task.validation, False), test, tokens)

    def translator(self, model) -> PrefixTranslator:
        """One `PrefixTranslator`: its search is compiled once (with XLA unless the test pairs
        are few: `resolve_jit_compile`)."""
        if self._translator is None:
            tokenizer = self.tokenizers["joint"]
            xla = resolve_jit_compile("auto", texts=len(self.task.test))
            self._translator = PrefixTranslator(
                model, tokenizer, max_length=self.plan.max_length, jit_compile=xla
            )
        return self._translator

    def build(self):
        model = models.build_language_model(
            self.tokenizers["joint"].vocab_size, config=self.plan.model
        )
        if self.start_weights is not None:
            self.start_weights.load_weights(model)
        return model

    def config_extra(self) -> dict:
        return {
            "joint_vocab_size": self.tokenizers["joint"].vocab_size,
            "sequence_length": self.plan.model.max_length,
            **self.plan.measured,
        }

    def prepare_evaluation(self, model) -> float:
        return decoding_seconds(self.translator(model), [s for s, _ in self.task.test])

    def evaluate(self, model, fit) -> dict:
        tokens = self.batches.tokens_per_epoch
        translator = self.translator(model)
        return translation_metrics(
            model, self.batches.test, self.task.test, translator, tokens, fit
        )
