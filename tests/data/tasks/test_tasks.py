"""load_task dispatch, its errors, and task_options."""

import pytest

from keras_transformer.data.tasks import TASKS, load_task, task_options


def test_task_names():
    assert TASKS == (
        "numbers",
        "copy",
        "reverse",
        "sort",
        "recall",
        "tsv",
        "spa_eng",
        "ted_hrlr_pt_en",
        "it-referent",
        "imdb",
        "reviews",
    )


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"name='nunbers'.*'numbers'.*'ted_hrlr_pt_en'"):
        load_task("nunbers")


def test_unknown_option_is_named_with_the_valid_ones():
    with pytest.raises(TypeError, match=r"\['lenght'\].*'length'"):
        load_task("copy", lenght=(2, 3))


def test_dispatch_passes_options():
    task = load_task("recall", distance=2, length=3, num_train=4, num_validation=1, num_test=1)
    assert task.name == "recall" and len(task.train) == 4
    assert all(t == s.split()[-2] for s, t in task.train)
    numbers = load_task(
        "numbers", target_lang="fr", max_number=50, num_train=10, num_validation=2, num_test=2
    )
    assert numbers.target_lang == "fr" and len(numbers.test) == 2


def test_task_options_lists_defaults():
    options = task_options("numbers")
    assert options["source_lang"] == "en" and options["num_train"] == 20_000
    assert "path" in task_options("tsv")
