"""make_dataset: framing, label shift, bucketed padding, nothing lost."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.data.batching.translation import (
    dataset_shapes,
    default_bucket_boundaries,
    fine_bucket_boundaries,
    make_dataset,
)
from keras_transformer.data.tasks.synthetic import reverse_task
from keras_transformer.data.text.tokenizer import WordPieceTokenizer

START, END = 2, 3


@pytest.fixture(scope="module")
def task():
    return reverse_task(vocab_size=8, length=(1, 20), num_train=150, num_validation=0, num_test=0)


@pytest.fixture(scope="module")
def tokenizer(task):
    return WordPieceTokenizer.learn([s for s, _ in task.train], vocab_size=50)


def _batches(dataset):
    return [(x["source"].numpy(), x["target"].numpy(), y.numpy()) for x, y in dataset]


def _real(row):
    return row[row != 0]


def test_shapes_dtypes_and_buckets(task, tokenizer):
    dataset = make_dataset(
        task.train, tokenizer, tokenizer, batch_size=8, max_length=32, drop_remainder=False
    )
    inputs_spec, labels_spec = dataset.element_spec
    assert inputs_spec["source"].dtype == tf.int32 and labels_spec.dtype == tf.int32
    allowed = set(dataset_shapes(32))
    assert allowed == {(s, t) for s in (8, 16, 32) for t in (8, 16, 32)}
    seen = set()
    for source, target, labels in _batches(dataset):
        assert (source.shape[1], target.shape[1]) in allowed
        assert target.shape == labels.shape and source.shape[0] == target.shape[0]
        seen.add((source.shape[1], target.shape[1]))
        # each row sits in the smallest bucket that holds it
        longest = max(len(_real(r)) for r in source)
        assert longest <= source.shape[1] and (
            source.shape[1] == 8 or longest > source.shape[1] // 2
        )
    assert len(seen) >= 2  # lengths 1..20 (+2) need more than one bucket


def test_framing_padding_and_label_shift(task, tokenizer):
    dataset = make_dataset(
        task.train, tokenizer, tokenizer, batch_size=8, max_length=32, drop_remainder=False
    )
    for source, target, labels in _batches(dataset):
        for s, t, y in zip(source, target, labels, strict=True):
            s_real, t_real = _real(s), _real(t)
            assert s_real[0] == START and s_real[-1] == END
            assert np.all(s[len(s_real) :] == 0) and np.all(t[len(t_real) :] == 0)
            assert t_real[0] == START and END not in t_real
            y_real = _real(y)
            assert y_real[-1] == END and len(y_real) == len(t_real)
            np.testing.assert_array_equal(y[:-1][: len(t_real) - 1], t[1:][: len(t_real) - 1])
            assert np.all(y[len(y_real) :] == 0)


def test_labels_detokenize_to_the_targets_and_nothing_is_lost(task, tokenizer):
    dataset = make_dataset(
        task.train, tokenizer, tokenizer, batch_size=16, max_length=32, drop_remainder=False
    )
    sources, targets = [], []
    for source, _, labels in _batches(dataset):
        sources += [s.decode() for s in tokenizer.detokenize(tf.constant(source)).numpy()]
        targets += [s.decode() for s in tokenizer.detokenize(tf.constant(labels)).numpy()]
    assert len(sources) == len(task.train)
    assert collections.Counter(zip(sources, targets, strict=True)) == collections.Counter(
        task.train
    )


def test_drop_remainder_gives_full_batches_only(task, tokenizer):
    dataset = make_dataset(task.train, tokenizer, tokenizer, batch_size=8, max_length=32)
    sizes = [source.shape[0] for source, _, _ in _batches(dataset)]
    assert sizes and set(sizes) == {8}
    assert sum(sizes) < len(task.train)


def test_trimming_keeps_end(tokenizer):
    long = " ".join(["a"] * 40)
    dataset = make_dataset(
        [(long, long)],
        tokenizer,
        tokenizer,
        batch_size=1,
        max_length=16,
        drop_remainder=False,
        shuffle=False,
    )
    ((source, target, labels),) = _batches(dataset)
    assert source.shape == (1, 16) and target.shape == (1, 16)
    assert source[0, 0] == START and source[0, -1] == END and END not in source[0, 1:-1]
    # The framed target has 16 tokens: 15 decoder inputs and 15 labels, padded to 16.
    assert len(_real(target[0])) == 15 and len(_real(labels[0])) == 15
    assert target[0, 0] == START and labels[0, 14] == END and END not in labels[0, :14]


def test_shuffle_is_seeded(task, tokenizer):
    def order(seed):
        dataset = make_dataset(task.train, tokenizer, tokenizer, batch_size=4, seed=seed)
        return [tuple(s[0]) for s, _, _ in _batches(dataset)]

    assert order(0) == order(0)
    assert order(0) != order(1)


def test_bucket_boundaries():
    assert default_bucket_boundaries(64) == (8, 16, 32, 64)
    assert default_bucket_boundaries(48) == (8, 16, 32, 48)
    assert dataset_shapes(32, bucket_boundaries=[12]) == [(12, 12), (12, 32), (32, 12), (32, 32)]
    with pytest.raises(ValueError, match="strictly increasing"):
        dataset_shapes(32, bucket_boundaries=[16, 8])
    with pytest.raises(ValueError, match="max_length=32"):
        dataset_shapes(32, bucket_boundaries=[8, 64])


def test_custom_boundaries_are_used(task, tokenizer):
    dataset = make_dataset(
        task.train,
        tokenizer,
        tokenizer,
        batch_size=8,
        max_length=24,
        bucket_boundaries=[12],
        drop_remainder=False,
    )
    shapes = {(s.shape[1], t.shape[1]) for s, t, _ in _batches(dataset)}
    assert shapes <= {(12, 12), (12, 24), (24, 12), (24, 24)} and len(shapes) >= 2


def test_argument_errors(task, tokenizer):
    with pytest.raises(ValueError, match="pairs is empty"):
        make_dataset([], tokenizer, tokenizer)
    with pytest.raises(TypeError, match=r"pairs\[1\]"):
        make_dataset([("a", "b"), ("a",)], tokenizer, tokenizer)
    with pytest.raises(ValueError, match="max_length=2"):
        make_dataset(task.train, tokenizer, tokenizer, max_length=2)
    with pytest.raises(ValueError, match="batch_size=0"):
        make_dataset(task.train, tokenizer, tokenizer, batch_size=0)


def _padded_tokens(dataset):
    real = padded = 0
    for source, _, labels in _batches(dataset):
        real += int(np.count_nonzero(source)) + int(np.count_nonzero(labels))
        padded += source.size + labels.size
    return real, padded


def test_padding_to_the_batch_pads_each_batch_to_its_longest_pair(task, tokenizer):
    dataset = make_dataset(
        task.train,
        tokenizer,
        tokenizer,
        batch_size=8,
        max_length=32,
        drop_remainder=False,
        pad_to_bucket=False,
    )
    boundaries = fine_bucket_boundaries(32)
    shapes = set()
    for source, target, labels in _batches(dataset):
        assert target.shape == labels.shape and source.shape[0] == target.shape[0]
        # no column of padding only: the batch's longest source and target set its shape
        assert max(len(_real(r)) for r in source) == source.shape[1]
        assert max(len(_real(r)) for r in labels) == labels.shape[1]
        # one bucket of the longer side (the framed source or the decoder input) per batch
        longer = [max(len(_real(s)), len(_real(y))) for s, y in zip(source, labels, strict=True)]
        buckets = {int(np.searchsorted(boundaries, n)) for n in longer}
        assert len(buckets) == 1, (longer, boundaries)
        shapes.add((source.shape[1], target.shape[1]))
    assert shapes - set(dataset_shapes(32))  # shapes off the boundaries: padded to the batch


def test_padding_to_the_batch_loses_nothing_and_pads_less(task, tokenizer):
    kwargs = {"batch_size": 16, "max_length": 32, "drop_remainder": False}
    by_batch = make_dataset(task.train, tokenizer, tokenizer, pad_to_bucket=False, **kwargs)
    pairs = []
    for source, _, labels in _batches(by_batch):
        pairs += zip(
            [s.decode() for s in tokenizer.detokenize(tf.constant(source)).numpy()],
            [s.decode() for s in tokenizer.detokenize(tf.constant(labels)).numpy()],
            strict=True,
        )
    assert collections.Counter(pairs) == collections.Counter(task.train)
    real, padded = _padded_tokens(by_batch)
    real_bucket, padded_bucket = _padded_tokens(
        make_dataset(task.train, tokenizer, tokenizer, **kwargs)
    )
    assert real == real_bucket and padded < 0.85 * padded_bucket


def test_fine_bucket_boundaries_and_pad_to_bucket_errors(task, tokenizer):
    assert fine_bucket_boundaries(104)[:3] == (4, 8, 12) and fine_bucket_boundaries(104)[-2:] == (
        100,
        104,
    )
    assert fine_bucket_boundaries(3) == (3,)
    with pytest.raises(TypeError, match="pad_to_bucket must be True or False"):
        make_dataset(task.train, tokenizer, tokenizer, pad_to_bucket="batch")
