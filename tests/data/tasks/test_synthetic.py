"""Synthetic tasks: copy, reverse, sort and recall compute what they promise."""

import pytest

from keras_transformer.data.tasks.synthetic import (
    ALPHABET,
    copy_task,
    recall_task,
    reverse_task,
    sort_task,
)

SIZES = {"num_train": 200, "num_validation": 20, "num_test": 20}


def _all_pairs(task):
    return task.train + task.validation + task.test


def test_copy_target_is_source():
    task = copy_task(**SIZES)
    assert all(source == target for source, target in _all_pairs(task))


def test_reverse_really_reverses():
    task = reverse_task(**SIZES)
    for source, target in _all_pairs(task):
        assert target.split() == source.split()[::-1]
    assert any(s != t for s, t in _all_pairs(task))


def test_sort_sorts_in_alphabet_order_keeping_repeats():
    task = sort_task(vocab_size=30, **SIZES)  # letters beyond z: A, B, C, D
    for source, target in _all_pairs(task):
        symbols = source.split()
        assert target.split() == sorted(symbols, key=ALPHABET.index)
    assert any(s.split() != t.split() for s, t in _all_pairs(task))
    assert any("A" in s for s, _ in _all_pairs(task))


@pytest.mark.parametrize("distance", [1, 3, 7])
def test_recall_answer_is_the_symbol_at_the_distance(distance):
    task = recall_task(distance=distance, length=(7, 12), **SIZES)
    for source, target in _all_pairs(task):
        assert target == source.split()[-distance]
        assert len(target.split()) == 1
    assert task.info["distance"] == distance


def test_recall_default_length_starts_at_distance():
    task = recall_task(distance=5, **SIZES)
    lengths = {len(s.split()) for s, _ in _all_pairs(task)}
    assert min(lengths) >= 5 and max(lengths) <= 13


def test_lengths_and_symbols_respect_options():
    task = copy_task(vocab_size=4, length=(2, 5), **SIZES)
    for source, _ in _all_pairs(task):
        symbols = source.split()
        assert 2 <= len(symbols) <= 5
        assert set(symbols) <= set("abcd")


def test_sources_are_distinct_so_splits_never_overlap():
    task = reverse_task(vocab_size=3, length=(1, 6), **SIZES)
    sources = [s for s, _ in _all_pairs(task)]
    assert len(sources) == len(set(sources))


def test_deterministic_for_a_seed():
    assert reverse_task(**SIZES) == reverse_task(**SIZES)
    assert reverse_task(**SIZES).train != reverse_task(seed=1, **SIZES).train


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"only 14"):
        copy_task(vocab_size=2, length=(1, 3), num_train=15, num_validation=0, num_test=0)
    with pytest.raises(ValueError, match=r"vocab_size=60"):
        copy_task(vocab_size=60)
    with pytest.raises(ValueError, match=r"distance=9"):
        recall_task(distance=9, length=(4, 12))
    with pytest.raises(ValueError, match=r"length=\(5, 3\)"):
        sort_task(length=(5, 3))
