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
            pretrained=None if self.start_weights is None else self.start_weights[0],
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
        """The accuracy on each split (on the training split: whether the classifier fits it),
        the test loss, and the accuracy of always answering the most common test label."""
        settings, tokenizer = self.plan.settings, self.tokenizers["source"]
        scores = {}
        for split in ("train", "validation", "test"):
            batches = _dataset(
                settings,
                self.task.split(split),
                tokenizer,
                self.class_names,
                self.plan.model.max_length,
                False,
            )
            scores[split] = model.evaluate(with_known_length(batches)[0], verbose=0)
        counts = np.bincount([self.class_names.index(label) for _, label in self.task.test])
        return {
            "test_accuracy": float(scores["test"][1]),
            "test_loss": float(scores["test"][0]),
            "train_accuracy": float(scores["train"][1]),
            "validation_accuracy": float(scores["validation"][1]),
            "chance_accuracy": float(counts.max() / counts.sum()),
            "num_train": len(self.task.train),
            "initialized_from": settings.init_from,
            "fresh_weights": settings.fresh_weights,
            "transferred_layers": self.transferred,
            "samples": [],
        }
