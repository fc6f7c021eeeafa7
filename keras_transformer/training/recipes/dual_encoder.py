"""Sentence vectors from pairs that mean the same (in-batch negatives), scored by retrieval."""

from keras_transformer import models
from keras_transformer.data.batching.contrastive import pair_dataset
from keras_transformer.inference import SentenceEncoder, retrieval_accuracy
from keras_transformer.training.fitting import classifier_compile
from keras_transformer.training.plan import Batches
from keras_transformer.training.recipes.base import Recipe, joint_tokenizer


class DualEncoderRecipe(Recipe):
    """Two sentences that mean the same, encoded apart; the other pairs of a batch are the
    negatives. A constant rate of 1e-3 unless `--learning-rate` says otherwise."""

    LEARNING_RATE = 1e-3

    @staticmethod
    def vocabularies(settings, task, init, vocab_size):
        why = " (a batch is the candidates)"
        return {"joint": joint_tokenizer(settings, task, vocab_size, why)}

    @staticmethod
    def make_batches(settings, task, tokenizers, max_length, pad_to_bucket):
        def dataset(pairs, batch_size, training):
            return pair_dataset(
                pairs,
                tokenizers["joint"],
                batch_size=batch_size,
                max_length=max_length,
                shuffle=training,
                seed=settings.seed,
            )

        batch = settings.batch_size
        return Batches(
            dataset(task.train, batch, True),
            dataset(task.validation, min(batch, len(task.validation)), False),
        )

    def build(self):
        vocab_size = self.tokenizers["joint"].vocab_size
        return models.build_dual_encoder(vocab_size, pooling="mean", config=self.plan.model)[0]

    def compile_options(self) -> dict:
        return classifier_compile("in_batch_accuracy")

    def config_extra(self) -> dict:
        return {"joint_vocab_size": self.tokenizers["joint"].vocab_size, "pooling": "mean"}

    def evaluate(self, model, fit) -> dict:
        encoder = model.get_layer("sentence_encoder")
        tokenizer, max_length = self.tokenizers["joint"], self.plan.max_length
        search = SentenceEncoder(encoder, tokenizer, pooling="mean", max_length=max_length)
        sources, targets = [s for s, _ in self.task.test], [t for _, t in self.task.test]
        nearest = search.similarity(sources, targets).argmax(axis=1)
        return {  # the right translation among all the test translations, and the reverse
            "test_retrieval_accuracy_at_1": retrieval_accuracy(search, sources, targets),
            "test_reverse_retrieval_accuracy_at_1": retrieval_accuracy(search, targets, sources),
            "chance_accuracy": 1.0 / len(self.task.test),
            "samples": [
                {"query": sources[i], "reference": targets[i], "retrieved": targets[j]}
                for i, j in enumerate(nearest[:5].tolist())
            ],
        }
