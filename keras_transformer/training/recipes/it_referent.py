"""A token classifier read at "it": encoder (global) or decoder-only (causal)."""

import os

import numpy as np

from keras_transformer import data, models
from keras_transformer.data.batching.classification import array_dataset, it_token_arrays
from keras_transformer.data.tasks import it_referent
from keras_transformer.training.plan import Batches
from keras_transformer.training.recipes.base import Recipe
from keras_transformer.visualization import attention_maps
from keras_transformer.visualization.figures import plot_attention

NUM_CLASSES = 1 + len(it_referent.CLASS_NAMES)
"""The "no label" class, then one per referent."""


class ItReferentRecipe(Recipe):
    """Which noun "it" refers to, read at the token "it"."""

    @staticmethod
    def vocabularies(settings, task, init, vocab_size):
        return {"source": data.WordPieceTokenizer.learn([s for s, _ in task.train], vocab_size)}

    @staticmethod
    def make_batches(settings, task, tokenizers, max_length, pad_to_bucket):
        def dataset(split, training):
            ids, labels, _ = it_token_arrays(task.split(split), tokenizers["source"], max_length)
            batch, seed = settings.batch_size, settings.seed
            return array_dataset(ids, labels, batch, shuffle=training, seed=seed)

        return Batches(dataset("train", True), dataset("validation", False))

    @property
    def causal(self) -> bool:
        return self.plan.settings.architecture == "decoder-only"

    def build(self):
        vocab_size = self.tokenizers["source"].vocab_size
        return models.build_token_classifier(
            vocab_size, NUM_CLASSES, causal=self.causal, config=self.plan.model
        )

    def config_extra(self) -> dict:
        return {
            "source_vocab_size": self.tokenizers["source"].vocab_size,
            "num_classes": NUM_CLASSES,
            "class_names": list(it_referent.CLASS_NAMES),
        }

    def evaluate(self, model, fit) -> dict:
        sentences = [s for s, _ in self.task.test]
        tokenizer, max_length = self.tokenizers["source"], self.plan.max_length
        ids, labels, positions = it_token_arrays(self.task.test, tokenizer, max_length)
        logits = model.predict(ids, batch_size=self.plan.batch_size, verbose=0)
        rows = np.arange(len(ids))
        predicted = logits[rows, positions, 1:].argmax(axis=-1)  # the "no label" logit dropped
        truth = labels[rows, positions] - 1
        speed = len(self.task.train) * fit.epochs_run / fit.seconds
        return {
            "test_accuracy": float((predicted == truth).mean()),
            "chance_accuracy": float(max(np.bincount(truth, minlength=2)) / len(truth)),
            "train_sentences_per_second": round(speed, 1),
            "samples": [
                {
                    "sentence": sentences[i],
                    "reference": self.task.test[i][1],
                    "prediction": it_referent.nouns(sentences[i])[int(predicted[i])],
                }
                for i in range(min(5, len(truth)))
            ],
        }

    def plot(self, model, plots_dir) -> None:
        sentence = self.task.test[0][0]
        found = attention_maps.it_attention(
            model, self.tokenizers["source"], sentence, causal=self.causal, config=self.plan.model
        )
        plot_attention(**found._asdict(), path=os.path.join(plots_dir, "it_attention.png"))
