"""An encoder classifier of whole texts (`reviews`, `imdb`), from scratch or fine-tuned from a
pre-training run (`init`: its model, tokenizer and config)."""

import numpy as np

from keras_transformer import data
from keras_transformer.data.batching.classification import classification_dataset
from keras_transformer.training.datasets import warn_if_truncated, with_known_length
from keras_transformer.training.fine_tuning import build_fine_tuned_classifier
from keras_transformer.training.fitting import classifier_compile
from keras_transformer.training.plan import Batches
from keras_transformer.training.recipes.base import Recipe


def _class_names(task) -> list[str]:
    return sorted({label for _, label in task.train})


def _dataset(settings, pairs, tokenizer, class_names, max_length, training):
    return classification_dataset(
        pairs,
        tokenizer,
        class_names,
        batch_size=settings.batch_size,
        max_length=max_length,
        seed=settings.seed,
        shuffle=training,
    )


class SequenceRecipe(Recipe):
    """One label per text, read from the encoder's pooled output."""

    def __init__(self, plan, task, init, tokenizers, batches):
        super().__init__(plan, task, init, tokenizers, batches)
        self.class_names = _class_names(task)
        self.transferred: list[str] = []  # the layers copied from the pre-trained encoder

    @staticmethod
    def vocabularies(settings, task, init, vocab_size):
        if init is not None:
            return {"source": init[1]}
        return {"source": data.WordPieceTokenizer.learn([s for s, _ in task.train], vocab_size)}

    @staticmethod
    def make_batches(settings, task, tokenizers, max_length, pad_to_bucket):
        tokenizer, names = tokenizers["source"], _class_names(task)
        warn_if_truncated([s for s, _ in task.train], tokenizer, max_length)
        return Batches(
            _dataset(settings, task.train, tokenizer, names, max_length, True),
            _dataset(settings, task.validation, tokenizer, names, max_length, False),
        )

    def build(self):
        model, copied = build_fine_tuned_classifier(
            self.tokenizers["source"].vocab_size,
            len(self.class_names),
            self.plan.model,
            pretrained=None if self.init is None else self.init[0],
            freeze_embeddings=self.plan.settings.freeze_embeddings,
        )
        self.transferred = list(copied)
        return model

    def compile_options(self) -> dict:
        return classifier_compile()

    def config_extra(self) -> dict:
        return {
            "source_vocab_size": self.tokenizers["source"].vocab_size,
            "class_names": self.class_names,
            "model_sizes": self.plan.model.to_dict(),
        }

    def evaluate(self, model, fit) -> dict:
        settings, tokenizer = self.plan.settings, self.tokenizers["source"]
        test = _dataset(
            settings, self.task.test, tokenizer, self.class_names, self.plan.model.max_length, False
        )
        test_loss, test_accuracy = model.evaluate(with_known_length(test)[0], verbose=0)
        counts = np.bincount([self.class_names.index(label) for _, label in self.task.test])
        return {
            "test_accuracy": float(test_accuracy),
            "test_loss": float(test_loss),
            "chance_accuracy": float(counts.max() / counts.sum()),
            "initialized_from": settings.init_from,
            "transferred_layers": self.transferred,
            "samples": [],
        }
