"""Dataset steps the recipes share: declaring the batch count, and checks of the batches."""

import logging

import numpy as np
import tensorflow as tf

from keras_transformer.errors import UserInputError

logger = logging.getLogger(__name__)


def token_lengths(texts: list[str], tokenizer) -> np.ndarray:
    """Pieces of each text (without `[START]`/`[END]`)."""
    return tokenizer.tokenize(tf.constant(texts)).row_lengths().numpy()


def report_truncated(
    lengths: np.ndarray, max_length: int, *, side: str = "source", chosen: bool = False
) -> int:
    """Log how many training texts of `side` exceed `max_length` framed tokens; return it.

    A length chosen from the data cuts at most 1 % of the pairs by design: an INFO line; a
    set one (given, or the task's default) that cuts texts: a warning naming side and value."""
    count = int((np.asarray(lengths) > max_length - 2).sum())  # [START] and [END]: two tokens
    if not count:
        return count
    if chosen:
        logger.info(
            "%s: %d of %d training texts exceed max_length=%d (chosen from the data: at most "
            "1%% of the pairs) and are truncated",
            side,
            count,
            len(lengths),
            max_length,
        )
    else:
        logger.warning(
            "%s: %d of %d training texts exceed max_length=%d (the setting, not chosen from the "
            "data) and are truncated; raise --max-length to keep them whole.",
            side,
            count,
            len(lengths),
            max_length,
        )
    return count


def warn_if_truncated(texts: list[str], tokenizer, max_length: int, side: str = "source") -> int:
    """`report_truncated` of `texts` under a given `max_length`."""
    return report_truncated(token_lengths(texts, tokenizer), max_length, side=side)


def with_known_length(dataset: tf.data.Dataset) -> tuple[tf.data.Dataset, int]:
    """`dataset` with its batch count declared (else Keras warns it "ran out of data"), and its
    non-padding label tokens per epoch."""
    batches = tokens = 0
    for _, labels in dataset:
        batches += 1
        tokens += int(tf.math.count_nonzero(labels))
    return dataset.apply(tf.data.experimental.assert_cardinality(batches)), tokens


def check_full_batch(filled: bool, config, why: str = "") -> None:
    """`ValueError` unless the training pairs fill a batch (incomplete ones are dropped)."""
    if not filled:
        raise UserInputError(
            f"the training pairs fill no complete batch of --batch-size {config.batch_size}"
            f"{why}; lower --batch-size or raise --num-train."
        )
