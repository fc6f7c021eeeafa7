"""The numbers task: num2words text, distinct numbers split by number, seeded sampling."""

import numpy as np
import pytest
from num2words import num2words

from keras_transformer.data.tasks.numbers import numbers_task, sample_numbers, supported_languages


def _small(**options):
    sizes = {"num_train": 300, "num_validation": 50, "num_test": 50}
    return numbers_task(**{**sizes, **options})


@pytest.fixture(scope="module")
def en_de():
    return _small()


def test_sizes_and_languages(en_de):
    assert (len(en_de.train), len(en_de.validation), len(en_de.test)) == (300, 50, 50)
    assert (en_de.name, en_de.source_lang, en_de.target_lang) == ("numbers", "en", "de")


def test_splits_are_disjoint_by_number(en_de):
    numbers = en_de.info["numbers"]
    train, validation, test = (set(numbers[s]) for s in ("train", "validation", "test"))
    assert len(train) == 300 and len(validation) == 50 and len(test) == 50
    assert not train & validation and not train & test and not validation & test
    sources = [{s for s, _ in getattr(en_de, split)} for split in ("train", "validation", "test")]
    assert not sources[0] & sources[1] and not sources[0] & sources[2]


def test_pairs_are_num2words_of_the_kept_numbers(en_de):
    for split in ("train", "validation", "test"):
        for n, pair in zip(en_de.info["numbers"][split], getattr(en_de, split), strict=True):
            assert pair == (num2words(n, lang="en"), num2words(n, lang="de"))
            assert 0 <= n <= 999_999


def test_text_is_kept_exactly_as_num2words_writes_it():
    # All 100 numbers of 0..99, so 97 and 16 are certainly there.
    task = numbers_task(
        source_lang="fr",
        target_lang="es",
        max_number=99,
        num_train=80,
        num_validation=10,
        num_test=10,
    )
    pairs = dict(task.train + task.validation + task.test)
    assert pairs["quatre-vingt-dix-sept"] == "noventa y siete"
    assert pairs["seize"] == "dieciséis"
    task = numbers_task(
        source_lang="de",
        target_lang="en",
        max_number=99,
        num_train=100,
        num_validation=0,
        num_test=0,
    )
    pairs = dict(task.train)
    assert pairs["vierundzwanzig"] == "twenty-four"
    assert pairs["fünf"] == "five"


@pytest.mark.parametrize(("source", "target"), [("en", "fr"), ("fr", "es"), ("de", "en")])
def test_other_language_pairs(source, target):
    task = _small(
        source_lang=source, target_lang=target, num_train=30, num_validation=5, num_test=5
    )
    n = task.info["numbers"]["test"][0]
    assert task.test[0] == (num2words(n, lang=source), num2words(n, lang=target))
    assert (task.source_lang, task.target_lang) == (source, target)


def test_same_seed_same_task_other_seed_other_task(en_de):
    again = _small()
    assert again.train == en_de.train and again.test == en_de.test
    other = _small(seed=1)
    assert other.info["numbers"]["train"] != en_de.info["numbers"]["train"]


def test_short_and_long_numbers_both_appear():
    numbers = sample_numbers(2000, 999_999, np.random.default_rng(0))
    digits = np.array([len(str(n)) for n in numbers.tolist()])
    # A uniform draw would give ~0.1% numbers of <= 3 digits.
    assert (digits <= 3).mean() > 0.03
    assert (digits <= 4).mean() > 0.10
    assert (digits == 6).mean() > 0.4
    assert len(set(numbers.tolist())) == 2000


def test_sampling_the_whole_range_gives_a_permutation():
    numbers = sample_numbers(1000, 999, np.random.default_rng(3))
    assert sorted(numbers.tolist()) == list(range(1000))


def test_too_many_numbers_is_an_error():
    with pytest.raises(ValueError, match=r"max_number=99 .*raise max_number"):
        numbers_task(max_number=99, num_train=90, num_validation=10, num_test=10)


def test_unsupported_language_is_named_and_supported_ones_listed():
    with pytest.raises(ValueError, match=r"target_lang='xx'.*'de'"):
        numbers_task(target_lang="xx", num_train=5, num_validation=0, num_test=0)
    assert {"en", "de", "fr", "es"} <= set(supported_languages())


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("num_train", 0, ValueError),
        ("num_test", -1, ValueError),
        ("seed", 1.5, TypeError),
        ("max_number", True, TypeError),
    ],
)
def test_bad_options_are_named(option, value, error):
    with pytest.raises(error, match=option):
        numbers_task(**{"num_train": 5, "num_validation": 0, "num_test": 0, option: value})


def test_a_language_num2words_cannot_write_far_says_how_far_it_goes():
    with pytest.raises(ValueError, match=r"'am' converter fails.*writes 999 but not 9999"):
        numbers_task(source_lang="en", target_lang="am")
    task = numbers_task(
        source_lang="en",
        target_lang="am",
        max_number=999,
        num_train=100,
        num_validation=10,
        num_test=10,
    )
    assert len(task.train) == 100
