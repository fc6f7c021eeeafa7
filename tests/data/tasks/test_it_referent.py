"""The it-referent task: held-out word combinations, labels decided by the word after "it"."""

import pytest

from keras_transformer.data.tasks import it_referent, load_task


@pytest.fixture(scope="module")
def task():
    return load_task("it-referent", num_train=3000, num_validation=200, num_test=400, seed=3)


def _key(sentence, referent):
    subject, obj = it_referent.nouns(sentence)
    return subject, obj, sentence.split()[-2]


def test_sizes_and_pattern(task):
    assert (len(task.train), len(task.validation), len(task.test)) == (3000, 200, 400)
    for sentence, referent in task.train[:50] + task.test[:50]:
        words = sentence.split()
        assert words[0] == "The" and "didn't" in words and words.count("it") == 1
        assert referent in it_referent.nouns(sentence)


def test_held_out_combinations_are_disjoint(task):
    train = {_key(*pair) for pair in task.train}
    validation = {_key(*pair) for pair in task.validation}
    test = {_key(*pair) for pair in task.test}
    assert len(test) == 400  # one sentence per held-out combination
    assert not train & test and not train & validation and not validation & test
    assert set(task.info["combinations"]["test"]) == test
    # every word of the test split was seen in training, only the combination is new
    train_words = {w for s, _ in task.train for w in s.split()}
    assert {w for s, _ in task.test for w in s.split()} <= train_words


def test_label_is_decided_by_the_adjective_after_it(task):
    for sentence, referent in task.train + task.test:
        words = sentence.split()
        adjective = words[-2]
        assert words.index(adjective) > it_referent.it_word_index(sentence)
        subject, obj = it_referent.nouns(sentence)
        expected = subject if adjective in it_referent.SUBJECT_ADJECTIVES else obj
        assert referent == expected


def test_the_prefix_up_to_it_does_not_determine_the_label(task):
    """Everything a causal model sees at "it" occurs with both labels."""
    labels_by_prefix = {}
    for sentence, referent in task.train:
        words = sentence.split()
        prefix = " ".join(words[: it_referent.it_word_index(sentence) + 1])
        labels_by_prefix.setdefault(prefix, set()).add(referent == words[1])
    # with 20 adjectives per prefix, most prefixes seen twice or more show both labels
    repeated = [labels for labels in labels_by_prefix.values() if len(labels) > 1]
    assert len(repeated) > 100
    labels = it_referent.referent_labels(task.test)
    assert 0.4 < labels.mean() < 0.6  # balanced: chance is 0.5


def test_labels_and_errors():
    pairs = [
        ("The cat didn't climb the wall because it was too tired .", "cat"),
        ("The cat didn't swim across the lake since it was so deep .", "lake"),
    ]
    assert it_referent.referent_labels(pairs).tolist() == [0, 1]
    with pytest.raises(ValueError, match="referent='dog'"):
        it_referent.referent_labels([(pairs[0][0], "dog")])
    with pytest.raises(ValueError, match="no word 'it'"):
        it_referent.it_word_index("The cat slept .")
    with pytest.raises(ValueError, match="num_validation \\+ num_test"):
        load_task("it-referent", num_validation=4000, num_test=4000)


def test_same_seed_same_task():
    a = load_task("it-referent", num_train=20, num_validation=5, num_test=5, seed=1)
    b = load_task("it-referent", num_train=20, num_validation=5, num_test=5, seed=1)
    assert a.train == b.train and a.test == b.test
