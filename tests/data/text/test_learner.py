"""The WordPiece learning pass with its first iteration shared between thresholds
(data/text/learner.py) against tensorflow-text's own `learn_with_thresh`."""

import pytest
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

from keras_transformer.data.tasks.numbers import numbers_task
from keras_transformer.data.text.learner import ThresholdLearner
from keras_transformer.data.text.tokenizer import RESERVED_TOKENS, count_words


def _params(chars, max_token_length=32, num_iterations=4, joiner="##"):
    return learner.Params(
        int(1e7), 1, num_iterations, int(5e6), max_token_length, len(chars), 100, 0.05, True,
        joiner, list(RESERVED_TOKENS),
    )  # fmt: skip


def _words(texts):
    counts = list(count_words(texts).items())
    chars = {c for word, _ in counts for c in word}
    return counts, chars


SENTENCES = [
    "el perro come la comida del perro pequeño",
    "los perros comen; el niño ## come #hashtag ##ab ab##",
    "über Übermorgen überall, naïve café déjà-vu",
    "unbelievably uncomfortable unconditionally",
] * 3 + ["a b c", "perro perros perrito perritos", "ççç ü"]


@pytest.mark.parametrize("thresh", [1, 2, 3, 4, 6, 10, 100])
def test_every_threshold_gives_tensorflow_texts_vocabulary(thresh):
    # Words holding the joiner ("##ab", "ab##") make a plain substring and a suffix piece spell
    # alike: the learner's later entry wins, and ours must keep the same one.
    counts, chars = _words(SENTENCES)
    params = _params(chars)
    assert ThresholdLearner(counts, params)(thresh) == learner.learn_with_thresh(
        counts, thresh, params
    )


def test_one_learner_serves_thresholds_in_any_order_like_fresh_ones():
    # The first pass is shared: a threshold learnt after others must not see their leftovers.
    task = numbers_task(num_train=1500, num_validation=8, num_test=8)
    counts, chars = _words([target for _, target in task.train])
    params = _params(chars, max_token_length=20, num_iterations=3)
    counts = learner.get_input_words(counts, params.reserved_tokens, 20)  # as `learn` filters
    learn = ThresholdLearner(counts, params)
    for thresh in (40, 5, 17, 5, 2):
        assert learn(thresh) == learner.learn_with_thresh(counts, thresh, params), thresh


@pytest.mark.parametrize("vocab_size", [60, 100, 150])
def test_the_first_iterations_guess_finds_the_window_in_no_more_passes(vocab_size):
    # The search guided by the learner's first iteration (`ThresholdLearner.guess`) against the
    # same search started in the middle of the range and led by its log-log line alone: both
    # land 0-5 % below the size asked (at thresholds that may differ), the guided one in no
    # more passes.
    from keras_transformer.data.text import tokenizer as module

    task = numbers_task(num_train=4000, num_validation=8, num_test=8)
    counts, chars = _words([source for source, _ in task.train])
    params = _params(chars)
    upper, lower = learner.get_search_threshs(counts, params.upper_thresh, 2)
    runs = {}
    for guided in (False, True):
        learn, tried = ThresholdLearner(counts, params), []

        def counted(thresh, learn=learn, tried=tried):
            tried.append(thresh)
            return learn(thresh)

        guess = learn.guess if guided else None
        vocab = module._find_threshold(counted, lower, upper, vocab_size, 0.05, guess=guess)
        runs[guided] = vocab, tried
    for vocab, _ in runs.values():
        assert 0.95 * vocab_size <= len(vocab) <= vocab_size
    assert len(runs[True][1]) <= len(runs[False][1]), runs
