"""The "ted_hrlr_pt_en" task: TED talk transcripts, Portuguese to English (TFDS).

The corpus of the TensorFlow Transformer tutorial (Qi et al., 2018), loaded with
tensorflow-datasets as `ted_hrlr_translate/pt_to_en`: about 52k training, 1.2k
validation and 1.8k test sentence pairs. tensorflow-datasets is imported only
when this task is loaded; the first load downloads and prepares the data
(about 125 MB) under `data_dir` (TFDS's default `~/tensorflow_datasets`).
"""

from __future__ import annotations

import os

from keras_transformer._validation import check_positive_int
from keras_transformer.data.tasks.task import SPLITS, Task
from keras_transformer.errors import MissingExtraError

TFDS_NAME = "ted_hrlr_translate/pt_to_en"


def ted_hrlr_pt_en_task(
    *,
    data_dir: str | os.PathLike | None = None,
    download: bool = True,
    num_train: int | None = None,
    num_validation: int | None = None,
    num_test: int | None = None,
) -> Task:
    """Portuguese -> English TED pairs from tensorflow-datasets, decoded to str.

    Args:
        data_dir: where TFDS keeps its data; `None` for its default.
        download: let TFDS download and prepare the data if it is missing.
        num_train, num_validation, num_test: keep only the first pairs of a
            split (in TFDS's order); all by default.

    Returns:
        A `Task` with `source_lang="pt"`, `target_lang="en"` and TFDS's train,
        validation and test splits.
    """
    try:
        import tensorflow_datasets as tfds
    except ImportError:
        raise MissingExtraError(
            "--task ted_hrlr_pt_en needs tensorflow-datasets, an optional dependency; install "
            'it with: pip install "keras_transformer[ted]"'
        ) from None
    sizes = {"train": num_train, "validation": num_validation, "test": num_test}
    for name, size in sizes.items():
        if size is not None:
            check_positive_int(f"num_{name}", size)
    datasets = tfds.load(
        TFDS_NAME,
        split=list(SPLITS),
        as_supervised=True,
        data_dir=None if data_dir is None else os.fspath(data_dir),
        download=download,
    )
    splits = {
        name: [
            (source.decode("utf-8"), target.decode("utf-8"))
            for source, target in tfds.as_numpy(
                dataset if sizes[name] is None else dataset.take(sizes[name])
            )
        ]
        for name, dataset in zip(SPLITS, datasets, strict=True)
    }
    return Task(
        name="ted_hrlr_pt_en",
        source_lang="pt",
        target_lang="en",
        train=splits["train"],
        validation=splits["validation"],
        test=splits["test"],
        info={"tfds_name": TFDS_NAME},
    )
