"""Fine-tuning a pre-trained encoder as a classifier: the model of the `sequence` recipe and
the quick comparison (`fine_tune`, `compare_fine_tuning`) a pre-training run ends with."""

import keras
import numpy as np

from keras_transformer import data, models
from keras_transformer.data.batching.classification import classification_dataset
from keras_transformer.models.config import TransformerConfig
from keras_transformer.training.fitting import build_optimizer, classifier_compile
from keras_transformer.training.optimizer import paper_adam

__all__ = ["build_fine_tuned_classifier", "compare_fine_tuning", "fine_tune"]


def build_fine_tuned_classifier(
    vocab_size: int,
    num_classes: int,
    sizes: TransformerConfig,
    *,
    pretrained: keras.Model | None = None,
    freeze_embeddings: bool = True,
    pooling: str = "cls",
) -> tuple[keras.Model, list[str]]:
    """A `build_classifier` whose encoder starts from `pretrained` (when given); returns the
    model and the names of the layers copied (`models.transfer_weights`).

    Frozen embeddings keep words seen only in pre-training near similar ones (`reviews`: frozen
    0.94/0.78/0.82 vs 0.91/0.54/0.77): small labelled sets move them."""
    model = models.build_classifier(vocab_size, num_classes, pooling=pooling, config=sizes)
    transferred = models.transfer_weights(pretrained, model) if pretrained is not None else []
    if freeze_embeddings:
        model.get_layer("encoder_embedding").trainable = False
    return model, transferred


def fine_tune(
    task: data.Task,
    tokenizer: data.WordPieceTokenizer,
    sizes: TransformerConfig | dict,
    *,
    pretrained: keras.Model | None,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    seed: int = 0,
    pooling: str = "cls",
    freeze_embeddings: bool = True,
) -> dict:
    """Trains a `build_classifier` on `task` and returns its accuracies.

    Calls differing only in `pretrained` measure pre-training (`build_fine_tuned_classifier`).

    Args:
        task: a sequence-classification `Task` (`(text, label)` pairs).
        tokenizer: the tokenizer of the pre-training run.
        sizes: the encoder's `TransformerConfig` (or a dict of its fields).
        pretrained: a masked language model whose encoder initialises the classifier, or None.
        epochs, batch_size, learning_rate, seed: the training recipe.
        pooling: `"cls"` or `"mean"`.
        freeze_embeddings: keep the token embeddings fixed (both starts alike).

    Returns:
        `{"test_accuracy", "validation_accuracy", "train_accuracy", "transferred_layers"}`.
    """
    class_names = sorted({label for _, label in task.train})
    if not isinstance(sizes, TransformerConfig):
        sizes = TransformerConfig.from_dict(sizes)
    keras.utils.set_random_seed(seed)
    model, transferred = build_fine_tuned_classifier(
        tokenizer.vocab_size,
        len(class_names),
        sizes,
        pretrained=pretrained,
        freeze_embeddings=freeze_embeddings,
        pooling=pooling,
    )
    model.compile(optimizer=paper_adam(learning_rate), **classifier_compile())
    build_optimizer(model)

    def dataset(split, shuffle=False):
        return classification_dataset(
            task.split(split),
            tokenizer,
            class_names,
            batch_size=batch_size,
            max_length=sizes.max_length,
            seed=seed,
            shuffle=shuffle,
        )

    model.fit(dataset("train", shuffle=True), epochs=epochs, shuffle=False, verbose=0)
    result = {"transferred_layers": transferred}
    for split in ("train", "validation", "test"):
        if task.split(split):
            result[f"{split}_accuracy"] = float(model.evaluate(dataset(split), verbose=0)[1])
    return result


def compare_fine_tuning(
    pretrained: keras.Model,
    tokenizer: data.WordPieceTokenizer,
    task: data.Task,
    sizes: TransformerConfig | dict,
    **recipe,
) -> dict:
    """`fine_tune` from the pre-trained encoder and from scratch, same recipe.

    Returns:
        `{"task", "num_train", "num_test", "<start>_test_accuracy", "chance_accuracy", <start>}`.
    """
    runs = {
        start: fine_tune(task, tokenizer, sizes, pretrained=model, **recipe)
        for start, model in (("pretrained", pretrained), ("scratch", None))
    }
    counts = np.unique([label for _, label in task.test], return_counts=True)[1]
    return {
        "task": task.name,
        "num_train": len(task.train),
        "num_test": len(task.test),
        "pretrained_test_accuracy": runs["pretrained"]["test_accuracy"],
        "scratch_test_accuracy": runs["scratch"]["test_accuracy"],
        "chance_accuracy": float(counts.max() / counts.sum()),
        **runs,
    }
