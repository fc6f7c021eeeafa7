"""The checkers name the cause of further typical bugs (issue 25 item 5), each written here
as a student would, and keep their own frames out of the student's traceback."""

import traceback

import numpy as np
import pytest
from keras import ops

from keras_transformer import exercises
from tests.test_exercises import StudentMultiHeadAttention, make_attention


def test_unused_output_projection_is_named():
    class NoOutputProjection(StudentMultiHeadAttention):
        def call(self, query, value, key=None, attention_mask=None):
            key = value if key is None else key
            q, k, v = (
                self.split_heads(d(x))
                for d, x in ((self.wq, query), (self.wk, key), (self.wv, value))
            )
            scores = ops.matmul(q, ops.swapaxes(k, -1, -2)) / np.sqrt(self.d_head)
            out = ops.transpose(ops.matmul(ops.softmax(scores, axis=-1), v), (0, 2, 1, 3))
            return ops.reshape(out, (ops.shape(out)[0], -1, self.d_model))  # self.wo unused

    with pytest.raises(AssertionError) as info:
        exercises.check_multi_head_attention(NoOutputProjection)
    message = str(info.value)
    assert "self.wo (Dense)" in message and "never calls it" in message, message
    assert "6 trainable weights found, 8 expected" in message


def test_mask_not_expanded_over_heads_shows_the_cause():
    class MaskNotExpanded(StudentMultiHeadAttention):
        def call(self, query, value, key=None, attention_mask=None):
            key = value if key is None else key
            q, k, v = (
                self.split_heads(d(x))
                for d, x in ((self.wq, query), (self.wk, key), (self.wv, value))
            )
            scores = ops.matmul(q, ops.swapaxes(k, -1, -2)) / np.sqrt(self.d_head)
            if attention_mask is not None:  # (batch, q, kv) against (batch, heads, q, kv)
                scores = ops.where(attention_mask, scores, -1e9)
            out = ops.transpose(ops.matmul(ops.softmax(scores, axis=-1), v), (0, 2, 1, 3))
            return self.wo(ops.reshape(out, (ops.shape(out)[0], -1, self.d_model)))

    with pytest.raises(AssertionError) as info:
        exercises.check_multi_head_attention(MaskNotExpanded)
    message = str(info.value)
    assert "Exception encountered" not in message, message
    assert "Incompatible shapes" in message or "broadcast" in message.lower(), message
    assert "\x1b[" not in message


def test_key_transposed_with_dot_t_is_explained():
    def attention(query, key, value, mask=None):
        scores = query @ key.T / np.sqrt(query.shape[-1])  # .T reverses all three axes
        if mask is not None:
            scores = np.where(mask, scores, -1e9)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights = weights / weights.sum(-1, keepdims=True)
        return weights @ value, weights

    with pytest.raises(AssertionError, match=r"np\.swapaxes\(key, -1, -2\)") as info:
        exercises.check_scaled_dot_product_attention(attention)
    assert "`.T` reverses every axis" in str(info.value)


def test_messages_say_section_of_the_paper():
    with pytest.raises(AssertionError, match=r"section 3\.2\.1 of the paper"):
        exercises.check_scaled_dot_product_attention(make_attention("no_scale"))


def test_traceback_hides_the_checker():
    try:
        exercises.check_scaled_dot_product_attention(make_attention("no_scale"))
    except AssertionError as error:
        frames = traceback.extract_tb(error.__traceback__)
        shown = "".join(traceback.format_exception(error))
    else:
        pytest.fail("the buggy attention was accepted")
    assert len([f for f in frames if f.filename.endswith("exercises.py")]) <= 1, frames
    assert "During handling of the above exception" not in shown
    assert "_compare" not in shown and "_fail" not in shown


def test_student_exception_is_not_chained():
    class Broken(StudentMultiHeadAttention):
        def call(self, query, value, key=None, attention_mask=None):
            raise ValueError("boom")

    with pytest.raises(AssertionError, match="raised ValueError: boom") as info:
        exercises.check_multi_head_attention(Broken)
    assert info.value.__cause__ is None and info.value.__suppress_context__
