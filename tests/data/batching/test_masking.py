"""BERT's masked-LM corruption: rates, what is never selected, labels, determinism."""

import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.data import WordPieceTokenizer
from keras_transformer.data.batching.masking import make_mlm_dataset, mask_tokens
from keras_transformer.data.text.tokenizer import RESERVED_TOKENS

MASK = RESERVED_TOKENS.index("[MASK]")
RESERVED = len(RESERVED_TOKENS)


def corpus_ids(rng, batch=400, length=60, vocab=500):
    ids = rng.integers(RESERVED, vocab, size=(batch, length)).astype("int32")
    ids[:, 0] = RESERVED_TOKENS.index("[START]")
    ends = rng.integers(5, length, size=batch)
    for row, end in enumerate(ends):
        ids[row, end] = RESERVED_TOKENS.index("[END]")
        ids[row, end + 1 :] = 0
    return ids


def test_rates_follow_bert_and_reserved_tokens_are_never_selected():
    ids = corpus_ids(np.random.default_rng(0))
    inputs, labels = (t.numpy() for t in mask_tokens(ids, [3, 4], vocab_size=500))
    ordinary = ids >= RESERVED
    selected = labels != 0
    assert not (selected & ~ordinary).any()  # never padding, [START], [END]
    assert abs(selected.sum() / ordinary.sum() - 0.15) < 0.01
    np.testing.assert_array_equal(labels[selected], ids[selected])  # the original ids
    np.testing.assert_array_equal(inputs[~selected], ids[~selected])  # the rest untouched
    masked = inputs[selected] == MASK
    kept = inputs[selected] == ids[selected]
    replaced = ~masked & ~kept
    assert abs(masked.mean() - 0.8) < 0.02
    assert abs(replaced.mean() - 0.1) < 0.015
    assert abs(kept.mean() - 0.1) < 0.015  # (a random draw equal to the original is rare)
    assert (inputs[selected][replaced] >= RESERVED).all()  # random ids are ordinary tokens


def test_custom_rates_and_determinism():
    ids = corpus_ids(np.random.default_rng(1))
    first = mask_tokens(
        ids, [7, 7], vocab_size=500, rate=0.4, mask_token_rate=1.0, random_token_rate=0.0
    )
    again = mask_tokens(
        ids, [7, 7], vocab_size=500, rate=0.4, mask_token_rate=1.0, random_token_rate=0.0
    )
    other = mask_tokens(
        ids, [7, 8], vocab_size=500, rate=0.4, mask_token_rate=1.0, random_token_rate=0.0
    )
    inputs, labels = (t.numpy() for t in first)
    assert abs((labels != 0).sum() / (ids >= RESERVED).sum() - 0.4) < 0.02
    assert (inputs[labels != 0] == MASK).all()
    np.testing.assert_array_equal(inputs, again[0].numpy())
    assert not np.array_equal(inputs, other[0].numpy())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"vocab_size": 6}, "must be larger than num_reserved=6"),
        ({"vocab_size": 50, "rate": 1.5}, r"rate must be a number in \[0, 1\]; received rate=1.5"),
        ({"vocab_size": 50, "mask_token_rate": 0.9, "random_token_rate": 0.2}, "must be <= 1"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        mask_tokens(np.array([[2, 9, 3]]), [0, 0], **kwargs)


def test_dataset_remasks_every_training_epoch_but_not_for_evaluation():
    texts = [f"the plot was dull number {i}" for i in range(40)]
    tokenizer = WordPieceTokenizer.learn(texts, 80)

    def epochs(shuffle):
        ds = make_mlm_dataset(
            texts, tokenizer, batch_size=8, max_length=12, seed=5, shuffle=shuffle, rate=0.5
        )
        return [[(x.numpy(), y.numpy()) for x, y in ds] for _ in range(2)]

    train = epochs(True)
    for inputs, labels in train[0]:
        assert inputs.shape == labels.shape and inputs.shape[1] <= 12
        real = inputs != 0
        assert ((labels != 0) <= real).all()  # labels only where there is a token
    assert any(not np.array_equal(a[1], b[1]) for a, b in zip(*train, strict=True))
    evaluation = epochs(False)
    for a, b in zip(*evaluation, strict=True):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    # the same seed gives the same training batches in a new pipeline
    for a, b in zip(train[0], epochs(True)[0], strict=True):
        np.testing.assert_array_equal(a[0], b[0])


def test_dataset_rejects_an_empty_corpus():
    tokenizer = WordPieceTokenizer.learn(["a b"], 20)
    with pytest.raises(ValueError, match="non-empty list"):
        make_mlm_dataset([], tokenizer, batch_size=2, max_length=8)
    assert isinstance(
        make_mlm_dataset(["a b"], tokenizer, batch_size=2, max_length=8), tf.data.Dataset
    )
