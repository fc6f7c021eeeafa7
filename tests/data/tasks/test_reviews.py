"""The generated reviews: test adjectives never labelled in training, corpus covers them all."""

import pytest

from keras_transformer.data import load_task
from keras_transformer.data.tasks.reviews import (
    NEGATIVE,
    NEGATIVE_CONTEXT,
    POSITIVE,
    POSITIVE_CONTEXT,
    polarity,
    reviews_corpus,
    split_adjectives,
)

ADJECTIVES = set(POSITIVE) | set(NEGATIVE)


def adjective_of(sentence):
    (word,) = [w for w in sentence.split() if w in ADJECTIVES]
    return word


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_test_adjectives_never_occur_in_training_or_validation(seed):
    task = load_task("reviews", num_train=300, num_validation=100, num_test=400, seed=seed)
    words = task.info["adjectives"]
    seen = {adjective_of(s) for s, _ in task.train + task.validation}
    unseen = {adjective_of(s) for s, _ in task.test}
    assert seen <= set(words["seen"]) and unseen <= set(words["unseen"])
    assert not seen & unseen
    assert not {s for s, _ in task.train} & {s for s, _ in task.validation}
    for sentence, label in task.train + task.validation + task.test:
        assert label == polarity(adjective_of(sentence))  # the adjective alone decides
        assert not any(c in sentence for c in POSITIVE_CONTEXT + NEGATIVE_CONTEXT)
    labels = [label for _, label in task.test]
    assert 0.35 < labels.count("positive") / len(labels) < 0.65


def test_adjective_split_is_half_of_each_polarity_and_depends_on_the_seed():
    words = split_adjectives(3)
    for polarity_words in (POSITIVE, NEGATIVE):
        assert len(set(words["seen"]) & set(polarity_words)) == len(polarity_words) // 2
    assert split_adjectives(3) == words and split_adjectives(4) != words


def test_corpus_pairs_every_adjective_with_words_of_its_polarity():
    corpus = reviews_corpus(3000, seed=2)
    assert corpus == reviews_corpus(3000, seed=2)
    words = [[w for w in s.split() if w in ADJECTIVES] for s in corpus]
    assert {w for found in words for w in found} == ADJECTIVES
    for sentence, found in zip(corpus, words, strict=True):
        polarities = {polarity(w) for w in found}
        assert len(polarities) == 1 and len(found) == len(set(found))
        same, other = (
            (POSITIVE_CONTEXT, NEGATIVE_CONTEXT)
            if polarities == {"positive"}
            else (NEGATIVE_CONTEXT, POSITIVE_CONTEXT)
        )
        assert len(found) == 2 or any(c in sentence for c in same)
        assert not any(c in sentence for c in other)


def test_sizes_beyond_the_distinct_sentences_are_refused():
    with pytest.raises(ValueError, match="exceeds the 1280 distinct"):
        load_task("reviews", num_train=1200, num_validation=200)
    with pytest.raises(ValueError, match="num_test=2000 exceeds"):
        load_task("reviews", num_test=2000)
    with pytest.raises(ValueError, match="not one of the task's sentiment adjectives"):
        polarity("purple")
