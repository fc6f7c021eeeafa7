"""The "spa_eng" task: the Anki/Tatoeba English-Spanish pairs of the keras-io translation example.

Downloaded only when this task is asked for, as the keras-io English-to-Spanish example does:
`keras.utils.get_file("spa-eng.zip", origin=ORIGIN, extract=True)`, cached under
`~/.keras/datasets` (about 2.6 MB; some 118k pairs of short sentences). The file inside,
`spa-eng/spa.txt`, is read and split as a user's TSV (`tsv.py`): by distinct English sentence,
with the same column and malformed-line rules (`columns=(2, 1)` trains Spanish -> English).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import keras

from keras_transformer.data.tasks.task import Task
from keras_transformer.data.tasks.tsv import tsv_task

ORIGIN = "http://storage.googleapis.com/download.tensorflow.org/data/spa-eng.zip"
"""Where the keras-io example downloads the corpus from."""

FILENAME = "spa.txt"


def find_corpus_file(root: str | os.PathLike) -> str:
    """The `spa.txt` under `root` (what `get_file(..., extract=True)` returned), or its folder."""
    root = os.fspath(root)
    folders = [root] if os.path.isdir(root) else [os.path.dirname(root)]
    for folder in folders:
        for directory, _, names in sorted(os.walk(folder)):
            if FILENAME in names:
                return os.path.join(directory, FILENAME)
    raise FileNotFoundError(
        f"no {FILENAME} under {root!r}: the downloaded spa-eng.zip is not the expected archive; "
        "delete it from ~/.keras/datasets and run again to download it anew"
    )


def spa_eng_task(
    *,
    on_error: str = "raise",
    columns: str | Sequence[int] = (1, 2),
    validation_fraction: float = 0.15,
    test_fraction: float = 0.15,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
) -> Task:
    """English -> Spanish pairs of the Anki/Tatoeba file `spa.txt` (downloaded on first use).

    Args:
        on_error: `"raise"` or `"skip"` for malformed lines (see `tsv.read_tsv`).
        columns: 1-based source and target columns; `(2, 1)` for Spanish -> English.
        validation_fraction: share of distinct sources for validation (keras-io: 0.15).
        test_fraction: share of distinct sources for test (keras-io: 0.15).
        seed: seed of the split.
        cache_dir: where `keras.utils.get_file` caches (None: `~/.keras`).

    Returns:
        A `Task` named `"spa_eng"` (en -> es, or es -> en with `columns=(2, 1)`).
    """
    if cache_dir is not None:
        os.makedirs(cache_dir, exist_ok=True)  # else get_file falls back to /tmp/.keras
    extracted = keras.utils.get_file(
        "spa-eng.zip",
        origin=ORIGIN,
        extract=True,
        cache_dir=None if cache_dir is None else os.fspath(cache_dir),
    )
    path = find_corpus_file(extracted)
    task = tsv_task(
        path=path,
        on_error=on_error,
        columns=columns,
        validation_fraction=validation_fraction,
        test_fraction=test_fraction,
        seed=seed,
    )
    swapped = tuple(task.info["columns"]) == (2, 1)
    return Task(
        name="spa_eng",
        source_lang="es" if swapped else "en",
        target_lang="en" if swapped else "es",
        train=task.train,
        validation=task.validation,
        test=task.test,
        info={**task.info, "origin": ORIGIN},
    )
