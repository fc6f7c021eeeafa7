"""A dual encoder trained with in-batch negatives: sentence vectors for semantic search.

One shared encoder embeds both sides of each pair; the loss is a softmax over the `B x B`
cosine similarities of a batch, whose right answer for row `i` is column `i`."""

import functools
from collections.abc import Sequence

import keras

from keras_transformer.data.batching.contrastive import pair_dataset
from keras_transformer.inference.sentence_encoder import SentenceEncoder, load_sentence_encoder
from keras_transformer.layers import InBatchSimilarity
from keras_transformer.models.dual_encoder import build_dual_encoder
from keras_transformer.training.fitting import classifier_compile

__all__ = [
    "InBatchSimilarity",
    "build_dual_encoder",
    "load_sentence_encoder",
    "pair_dataset",
    "train_dual_encoder",
]


def train_dual_encoder(
    train_pairs: Sequence[tuple[str, str]],
    validation_pairs: Sequence[tuple[str, str]],
    tokenizer,
    *,
    epochs: int = 10,
    batch_size: int = 64,
    learning_rate: float = 1e-3,
    max_length: int = 48,
    seed: int = 0,
    verbose: int = 0,
    **model_kwargs,
) -> tuple[SentenceEncoder, keras.callbacks.History]:
    """Trains `build_dual_encoder` on pairs and returns a `SentenceEncoder`.

    Args:
        train_pairs: `(left, right)` strings that mean the same.
        validation_pairs: held-out pairs for the validation loss.
        tokenizer: one joint `WordPieceTokenizer` over both sides.
        epochs, batch_size, learning_rate: of Adam; `batch_size` candidates per pair.
        max_length: longest framed sentence.
        seed: shuffling and initialization seed.
        verbose: `model.fit` verbosity.
        **model_kwargs: `build_dual_encoder` options (`d_model`, `num_layers`, ...).

    Returns:
        `(SentenceEncoder, history)`.
    """
    keras.utils.set_random_seed(seed)
    pooling = model_kwargs.get("pooling", "mean")
    model, encoder = build_dual_encoder(tokenizer.vocab_size, max_length=max_length, **model_kwargs)
    model.compile(keras.optimizers.Adam(learning_rate), **classifier_compile("in_batch_accuracy"))
    dataset = functools.partial(
        pair_dataset, tokenizer=tokenizer, batch_size=batch_size, max_length=max_length, seed=seed
    )
    validation = dataset(validation_pairs, shuffle=False) if validation_pairs else None
    fit = {"epochs": epochs, "shuffle": False, "verbose": verbose}  # tf.data shuffles itself
    history = model.fit(dataset(train_pairs, shuffle=True), validation_data=validation, **fit)
    return SentenceEncoder(encoder, tokenizer, pooling=pooling, max_length=max_length), history
