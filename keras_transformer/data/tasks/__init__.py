"""Tasks: `load_task`, one entry point for every task by name, and one module per loader.

Every loader returns a `Task` (`task.py`): train, validation and test pairs of strings.

| name               | what                                                       |
|--------------------|------------------------------------------------------------|
| `"numbers"`        | an integer in words, two languages (`numbers.py`)          |
| `"copy"`           | symbol sequence -> same sequence (`synthetic.py`)          |
| `"reverse"`        | symbol sequence -> reversed                                |
| `"sort"`           | symbol sequence -> sorted                                  |
| `"recall"`         | symbol sequence -> the symbol `distance` from the end      |
| `"tsv"`            | a user's `source<TAB>target` file (`tsv.py`)               |
| `"spa_eng"`        | Anki/Tatoeba English -> Spanish, downloaded on request (`spa_eng.py`) |
| `"ted_hrlr_pt_en"` | TED Portuguese -> English via tensorflow-datasets (`ted.py`) |
| `"it-referent"`    | the course's "it" sentences -> the noun "it" refers to (`it_referent.py`) |
| `"imdb"`           | IMDB reviews -> positive / negative via keras.datasets (`imdb.py`) |
| `"reviews"`        | generated review sentences -> positive / negative; test words unseen in training (`reviews.py`) |
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from keras_transformer.choices import TASKS
from keras_transformer.data.tasks.imdb import imdb_task
from keras_transformer.data.tasks.it_referent import it_referent_task
from keras_transformer.data.tasks.numbers import numbers_task
from keras_transformer.data.tasks.reviews import reviews_task
from keras_transformer.data.tasks.spa_eng import spa_eng_task
from keras_transformer.data.tasks.synthetic import copy_task, recall_task, reverse_task, sort_task
from keras_transformer.data.tasks.task import Task
from keras_transformer.data.tasks.ted import ted_hrlr_pt_en_task
from keras_transformer.data.tasks.tsv import tsv_task
from keras_transformer.errors import UserInputError

_LOADERS: dict[str, Callable[..., Task]] = {
    "numbers": numbers_task,
    "copy": copy_task,
    "reverse": reverse_task,
    "sort": sort_task,
    "recall": recall_task,
    "tsv": tsv_task,
    "spa_eng": spa_eng_task,
    "ted_hrlr_pt_en": ted_hrlr_pt_en_task,
    "it-referent": it_referent_task,
    "imdb": imdb_task,
    "reviews": reviews_task,
}

if set(_LOADERS) != set(TASKS):  # choices.py is the one list; every name needs its loader
    raise ImportError(f"task loaders {sorted(_LOADERS)} differ from choices.TASKS {sorted(TASKS)}")


def task_options(name: str) -> dict[str, Any]:
    """The options of task `name` and their defaults (`inspect.Parameter.empty` if required).

    Example:

    >>> task_options("numbers")["target_lang"]
    'de'
    """
    loader = _loader(name)
    return {p.name: p.default for p in inspect.signature(loader).parameters.values()}


def _loader(name: str) -> Callable[..., Task]:
    if name not in _LOADERS:
        raise UserInputError(f"name={name!r} is not a known task; choose one of {list(TASKS)}")
    return _LOADERS[name]


def load_task(name: str, **options: Any) -> Task:
    """Loads (or generates) the task `name` with its `options`.

    Args:
        name: one of `TASKS`: `"numbers"`, `"copy"`, `"reverse"`, `"sort"`,
            `"recall"`, `"tsv"`, `"spa_eng"`, `"ted_hrlr_pt_en"`, `"it-referent"`, `"imdb"`, `"reviews"`.
        **options: the keyword arguments of that task's loader
            (`numbers_task`, `copy_task`, ..., see `task_options(name)`).

    Returns:
        A `Task` with `train`, `validation` and `test` lists of `(source, target)`.

    Example:

    >>> task = load_task("numbers", source_lang="en", target_lang="de", max_number=30,
    ...                  num_train=20, num_validation=5, num_test=5, seed=1)
    >>> task
    Task(name='numbers', en->de, train=20, validation=5, test=5)
    >>> load_task("reverse", length=4, num_train=1, num_validation=0, num_test=0).train
    [('i g f c', 'c f g i')]
    """
    loader = _loader(name)
    valid = set(inspect.signature(loader).parameters)
    unknown = sorted(set(options) - valid)
    if unknown:
        raise TypeError(
            f"load_task({name!r}) got unknown option(s) {unknown}; "
            f"valid options are {sorted(valid)}"
        )
    return loader(**options)
