"""Data for the Transformer: tasks, a WordPiece tokenizer and the tf.data pipeline.

- `load_task(name, **options)` -> `Task` with train / validation / test pairs of
  strings (`TASKS` lists the names).
- `WordPieceTokenizer` learns a vocabulary, keeps case and accents, and runs
  in-graph (a `tf.Module`, exportable in a SavedModel).
- `make_dataset` turns pairs into padded, length-bucketed batches for
  `model.fit`; `encode_source` prepares source strings for inference.
"""

from keras_transformer.data.pipeline import (
    dataset_shapes,
    default_bucket_boundaries,
    encode_source,
    make_dataset,
)
from keras_transformer.data.task import Task
from keras_transformer.data.tasks import TASKS, load_task, task_options
from keras_transformer.data.tokenizer import RESERVED_TOKENS, WordPieceTokenizer

__all__ = [
    "RESERVED_TOKENS",
    "TASKS",
    "Task",
    "WordPieceTokenizer",
    "dataset_shapes",
    "default_bucket_boundaries",
    "encode_source",
    "load_task",
    "make_dataset",
    "task_options",
]
