"""frame / encode_source: `[START] ids [END]`, trimmed text, kept `[END]`, padding 0."""

import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.data.batching.framing import encode_source, frame
from keras_transformer.data.text.tokenizer import WordPieceTokenizer

START, END = 2, 3


@pytest.fixture(scope="module")
def tokenizer():
    return WordPieceTokenizer.learn(["a b c d", "d c b a"], vocab_size=30)


def test_encode_source_matches_the_dataset_framing(tokenizer):
    encoded = encode_source(["a b c", "d"], tokenizer, max_length=4).numpy()
    assert encoded.dtype == np.int32 and encoded.shape == (2, 4)
    ids = tokenizer.tokenize(["a b c", "d"]).to_list()
    assert encoded.tolist() == [[START, ids[0][0], ids[0][1], END], [START, ids[1][0], END, 0]]
    graph = tf.function(lambda s: encode_source(s, tokenizer, max_length=8))
    assert graph(tf.constant(["a"])).numpy().tolist() == [[START, ids[0][0], END]]


def test_frame_trims_text_not_end():
    framed = frame(tf.ragged.constant([[5, 6, 7, 8], []], tf.int64), START, END, max_length=4)
    assert framed.to_list() == [[START, 5, 6, END], [START, END]]


def test_max_length_too_short_for_start_and_end_is_named(tokenizer):
    with pytest.raises(
        ValueError, match="max_length must be an integer >= 3; received max_length=2"
    ):
        encode_source(["a"], tokenizer, max_length=2)
    with pytest.raises(TypeError, match="max_length must be an integer; received max_length=4.0"):
        encode_source(["a"], tokenizer, max_length=4.0)
