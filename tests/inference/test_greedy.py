"""greedy_decode: agrees with step-by-step argmax, stops at END, batch-independent."""

import numpy as np
import pytest

from keras_transformer.inference import greedy_decode
from keras_transformer.models import build_transformer

START, END = 2, 3


@pytest.fixture(scope="module")
def model():
    return build_transformer(12, 14, num_layers=1, d_model=16, num_heads=2, dff=32)


def reference_decode(model, source, max_length):
    """Grow the target one token at a time, no padding, no compilation."""
    target = [START]
    for _ in range(max_length):
        logits = np.asarray(model({"source": source[None], "target": np.array([target])}))
        token = int(logits[0, -1, 1:].argmax()) + 1  # [PAD] (id 0) is never generated
        target.append(token)
        if token == END:
            break
    return target[1:]


def test_matches_reference_and_batch_equals_one_by_one(model):
    rng = np.random.default_rng(0)
    sources = rng.integers(4, 12, size=(5, 6)).astype("int32")
    sources[:, 0], sources[:, -1] = START, END
    sources[1, 4:] = [END, 0]
    batched = greedy_decode(model, sources, start_id=START, end_id=END, max_length=7, batch_size=2)
    assert batched.shape == (5, 7)
    for row, source in zip(batched, sources, strict=True):
        expected = reference_decode(model, source, 7)
        np.testing.assert_array_equal(row[: len(expected)], expected)
        assert np.all(row[len(expected) :] == 0)  # nothing after END


def test_rejects_non_batch_input(model):
    with pytest.raises(ValueError, match="2-D"):
        greedy_decode(model, np.array([2, 5, 3]), start_id=START, end_id=END, max_length=3)
