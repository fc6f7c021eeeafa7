"""Classification batches: a class index per text, a label per token at "it"."""

import numpy as np
import pytest

from keras_transformer.data.batching.classification import (
    array_dataset,
    classification_dataset,
    it_token_arrays,
)
from keras_transformer.data.text.tokenizer import WordPieceTokenizer

SENTENCES = [
    ("The dog didn't cross the road because it was too tired .", "dog"),
    ("The dog didn't cross the road because it was too wide .", "road"),
]


@pytest.fixture(scope="module")
def tokenizer():
    return WordPieceTokenizer.learn(
        ([s for s, _ in SENTENCES] + ["good film", "bad film"]) * 20, 200
    )


def test_labels_are_class_indices_in_the_order_of_class_names(tokenizer):
    pairs = [("good film", "pos"), ("bad film", "neg"), ("bad film", "neg")]
    ds = classification_dataset(pairs, tokenizer, ["neg", "pos"], batch_size=3, max_length=6)
    ((ids, labels),) = list(ds)
    assert labels.numpy().tolist() == [1, 0, 0]
    texts = [t.decode() for t in tokenizer.detokenize(ids).numpy()]
    assert texts == ["good film", "bad film", "bad film"]
    assert (ids.numpy()[:, 0] == tokenizer.start_id).all()
    with pytest.raises(ValueError, match=r"labels \['meh'\] are not among"):
        classification_dataset([("film", "meh")], tokenizer, ["neg"], batch_size=1, max_length=6)


def test_it_label_is_one_plus_the_referent_class(tokenizer):
    ids, labels, positions = it_token_arrays(SENTENCES, tokenizer, 32)
    it_id = tokenizer.token_to_id("it")
    assert [int(ids[row, positions[row]]) for row in range(2)] == [it_id, it_id]
    expected = np.zeros_like(labels)
    expected[0, positions[0]], expected[1, positions[1]] = 1, 2  # subject, object
    np.testing.assert_array_equal(labels, expected)


def test_it_cut_off_by_max_length_is_an_error(tokenizer):
    with pytest.raises(ValueError, match="max_length=6"):
        it_token_arrays(SENTENCES, tokenizer, 6)


def test_array_dataset_reshuffles_every_epoch_and_keeps_every_row():
    inputs = np.arange(40).reshape(20, 2)
    ds = array_dataset(inputs, np.arange(20), 5, shuffle=True, seed=0)
    epochs = [np.concatenate([y.numpy() for _, y in ds]).tolist() for _ in range(2)]
    assert epochs[0] != epochs[1]
    assert sorted(epochs[0]) == sorted(epochs[1]) == list(range(20))
    unshuffled = array_dataset(inputs, np.arange(20), 5, shuffle=False, seed=0)
    assert np.concatenate([y.numpy() for _, y in unshuffled]).tolist() == list(range(20))
