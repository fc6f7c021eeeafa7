"""Decoder-only generation: cache equivalence, prompts, sampling filters and seeds."""

import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.errors import UserInputError
from keras_transformer.inference import filter_logits, generate
from keras_transformer.models import build_language_model


@pytest.fixture(scope="module")
def lm():
    return build_language_model(25, num_layers=2, d_model=16, num_heads=2, dff=32)


def test_greedy_cached_equals_uncached_and_full_model(lm):
    prompts = np.array([[2, 7, 8], [2, 5, 0]])
    a = generate(lm, prompts, max_length=9)
    b = generate(lm, prompts, max_length=9, use_cache=False)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[:, :2], prompts[:, :2])  # prompts are kept
    np.testing.assert_array_equal(a[0, :3], prompts[0])
    # every generated token is the arg-max of the full model on its prefix
    for row in a:
        for t in range(3, 9):
            logits = np.asarray(lm(row[None, :t]))
            assert row[t] == logits[0, -1].argmax()


def test_sampling_is_seeded_and_cache_independent(lm):
    prompts = np.array([[2, 4], [2, 9]])
    kwargs = dict(max_length=10, sample=True, temperature=1.5, top_k=5, top_p=0.9)
    a = generate(lm, prompts, seed=3, **kwargs)
    np.testing.assert_array_equal(a, generate(lm, prompts, seed=3, **kwargs))
    np.testing.assert_array_equal(a, generate(lm, prompts, seed=3, use_cache=False, **kwargs))
    assert not np.array_equal(a, generate(lm, prompts, seed=4, **kwargs))


def test_top_k_one_is_greedy(lm):
    prompts = np.array([[2, 6, 11]])
    np.testing.assert_array_equal(
        generate(lm, prompts, max_length=8, sample=True, top_k=1, seed=0),
        generate(lm, prompts, max_length=8),
    )


def test_end_id_stops_and_pads(lm):
    out = generate(
        lm,
        np.array([[2, 3]]),
        max_length=6,
        end_id=int(np.asarray(lm(np.array([[2, 3]])))[0, -1].argmax()),
    )
    assert np.all(out[0, 3:] == 0)


def test_filter_logits_top_p_and_temperature():
    logits = tf.math.log([[0.1, 0.6, 0.3]])
    kept = ~np.isinf(filter_logits(logits, top_p=0.65).numpy())
    assert kept.tolist() == [[False, True, True]]
    assert (~np.isinf(filter_logits(logits, top_p=0.5).numpy())).sum() == 1
    np.testing.assert_allclose(filter_logits(logits, temperature=2.0), np.asarray(logits) / 2)


def test_bad_arguments(lm):
    with pytest.raises(ValueError, match="at least one token"):
        generate(lm, np.array([[0, 0]]), max_length=4)
    with pytest.raises(ValueError, match="temperature"):
        generate(lm, np.array([[2]]), max_length=4, temperature=0)
    with pytest.raises(ValueError, match="prompt_len"):
        generate(lm, np.array([[2, 3, 4]]), max_length=2)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(top_k=0), "top_k must be a positive integer; received top_k=0"),
        (dict(top_k=-3), "top_k=-3"),
        (dict(top_k=26), "top_k must be at most 25; received top_k=26"),
        (dict(top_p=0.0), "top_p must be a number in \\(0, 1\\].*top_p=0.0"),
        (dict(top_p=1.5), "top_p=1.5"),
        (dict(top_p=-0.1), "top_p=-0.1"),
        (dict(temperature=0.0), "temperature must be a number in \\(0, inf\\).*temperature=0.0"),
        (dict(temperature=-1), "temperature=-1"),
    ],
)
def test_sampling_arguments_are_checked_before_decoding(lm, kwargs, message):
    with pytest.raises(UserInputError, match=message):
        generate(lm, np.array([[2]]), max_length=4, sample=True, **kwargs)


@pytest.mark.parametrize(
    "kwargs", [dict(top_k=2.5), dict(top_p="0.9"), dict(temperature="hot"), dict(top_k=True)]
)
def test_a_sampling_argument_of_the_wrong_type_is_a_type_error(lm, kwargs):
    # the package's one rule (_validation): a wrong type is a TypeError naming the argument
    name, value = next(iter(kwargs.items()))
    with pytest.raises(TypeError, match=f"{name}={value!r}"):
        generate(lm, np.array([[2]]), max_length=4, sample=True, **kwargs)


def test_edge_values_of_sampling_arguments_are_accepted(lm):
    out = generate(lm, np.array([[2]]), max_length=4, sample=True, top_k=25, top_p=1.0)
    assert out.shape == (1, 4)


def test_max_length_beyond_the_position_table(lm):
    small = build_language_model(25, num_layers=1, d_model=8, num_heads=2, dff=16, max_length=6)
    with pytest.raises(ValueError, match="max_length=7 exceeds the model's position table of 6"):
        generate(small, np.array([[2]]), max_length=7)


def test_generating_again_with_the_same_settings_does_not_trace_again():
    from keras_transformer.inference import generation

    lm = build_language_model(20, num_layers=1, d_model=8, num_heads=2, dff=16)
    prompts = np.array([[2, 5], [2, 7]])
    first = generation.generate(lm, prompts, max_length=6, sample=True, top_k=3, seed=1)
    for _ in range(5):
        again = generation.generate(lm, prompts, max_length=6, sample=True, top_k=3, seed=1)
    np.testing.assert_array_equal(first, again)
    runs = [run for (model_id, _), run in generation._COMPILED.items() if model_id == id(lm)]
    assert len(runs) == 1 and runs[0].experimental_get_tracing_count() == 1
