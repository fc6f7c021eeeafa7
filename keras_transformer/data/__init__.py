"""Data for the Transformer: tasks, text and batching, one subpackage each.

- `tasks/`: `load_task(name, **options)` -> `Task` with train / validation / test
  pairs of strings (`TASKS` lists the names); one module per loader.
- `text/`: `WordPieceTokenizer` learns a vocabulary, keeps case and accents, and
  runs in-graph (a `tf.Module`, exportable in a SavedModel); `normalize` gives
  every tokenizer input one Unicode form and one kind of space.
- `batching/`: `make_dataset` turns translation pairs into padded,
  length-bucketed batches for `model.fit` and `encode_source` frames source
  strings for inference; one module per kind of batch (translation, prefix,
  classification, contrastive, masked language model).

A corpus's statistics and the sizes they choose are `training.planning`'s (the one sizing module).

This module re-exports the public names; each lives in the module named below.
"""

from keras_transformer.data.batching.framing import encode_source
from keras_transformer.data.batching.translation import (
    dataset_shapes,
    default_bucket_boundaries,
    fine_bucket_boundaries,
    make_dataset,
)
from keras_transformer.data.tasks import TASKS, load_task, task_options
from keras_transformer.data.tasks.task import Task
from keras_transformer.data.text.tokenizer import RESERVED_TOKENS, WordPieceTokenizer

__all__ = [
    "RESERVED_TOKENS",
    "TASKS",
    "Task",
    "WordPieceTokenizer",
    "dataset_shapes",
    "default_bucket_boundaries",
    "fine_bucket_boundaries",
    "encode_source",
    "load_task",
    "make_dataset",
    "task_options",
]
