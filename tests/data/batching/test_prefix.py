"""Prefix batches: `[START] source [SEP] target [END]`, loss on the target only."""

import pytest

from keras_transformer.data.batching.prefix import encode_prompts, prefix_dataset
from keras_transformer.data.text.tokenizer import WordPieceTokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return WordPieceTokenizer.learn(["a b c d e f", "x y z"], vocab_size=40)


def words(tokenizer, ids):
    return [tokenizer.vocabulary[i] for i in ids]


def test_prompts_cut_the_source_and_keep_start_and_sep(tokenizer):
    prompts = encode_prompts(["a b c d e f", "x"], tokenizer, max_length=5).to_list()
    assert words(tokenizer, prompts[0]) == ["[START]", "a", "b", "c", "[SEP]"]
    assert words(tokenizer, prompts[1]) == ["[START]", "x", "[SEP]"]


def test_unshuffled_batches_keep_every_pair_in_order_padded_per_batch(tokenizer):
    pairs = [("a", "x"), ("a b c", "y z"), ("d", "z")]
    batches = list(prefix_dataset(pairs, tokenizer, batch_size=2, max_length=8, shuffle=False))
    assert [tuple(x.shape) for x, _ in batches] == [(2, 7), (1, 4)]  # the last batch is kept
    first_inputs, first_labels = (t.numpy().tolist() for t in batches[0])
    assert words(tokenizer, first_inputs[0]) == [
        "[START]",
        "a",
        "[SEP]",
        "x",
        "[PAD]",
        "[PAD]",
        "[PAD]",
    ]
    assert words(tokenizer, first_labels[1]) == [
        "[PAD]",
        "[PAD]",
        "[PAD]",
        "[PAD]",
        "y",
        "z",
        "[END]",
    ]
