"""Dataset steps the recipes share: declaring the batch count, and checks of the batches."""

import logging

import tensorflow as tf

logger = logging.getLogger(__name__)


def warn_if_truncated(texts: list[str], tokenizer, max_length: int) -> int:
    """Log how many training texts exceed `max_length` framed tokens (they are cut); return it."""
    lengths = tokenizer.tokenize(tf.constant(texts)).row_lengths().numpy()
    count = int((lengths > max_length - 2).sum())  # [START] and [END] take two positions
    if count:
        logger.warning(
            "%d of %d training text(s) exceed max_length=%d tokens and are truncated; raise "
            "--max-length to keep them whole.", count, len(texts), max_length,
        )  # fmt: skip
    return count


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
        raise ValueError(
            f"the training pairs fill no complete batch of --batch-size {config.batch_size}"
            f"{why}; lower --batch-size or raise --num-train."
        )
