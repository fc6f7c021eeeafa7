"""Task: a frozen record of three splits of (source, target) pairs."""

import dataclasses

import pytest

from keras_transformer.data.tasks.task import SPLITS, Task


def test_task_is_frozen_and_splits_are_reachable_by_name():
    task = Task("toy", "en", "de", train=[("one", "eins")], validation=[], test=[("two", "zwei")])
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.name = "other"
    assert task.split("test") == [("two", "zwei")]
    with pytest.raises(ValueError, match="split='dev'"):
        task.split("dev")
    assert repr(task) == "Task(name='toy', en->de, train=1, validation=0, test=1)"


def test_split_names_are_the_three_fields():
    assert SPLITS == ("train", "validation", "test")
    task = Task("toy", "en", "de", train=[("a", "b")], validation=[("c", "d")], test=[])
    assert [task.split(name) for name in SPLITS] == [[("a", "b")], [("c", "d")], []]
