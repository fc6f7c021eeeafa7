"""`Task`: a named parallel corpus split into train, validation and test pairs."""

from __future__ import annotations

import dataclasses
from typing import Any

SPLITS: tuple[str, ...] = ("train", "validation", "test")


@dataclasses.dataclass(frozen=True, repr=False)
class Task:
    """A translation task: `(source, target)` string pairs in three splits.

    Returned by `load_task`. Every split is a list of `(source: str, target: str)`
    tuples; the text is exactly what the loader produced (no lower-casing,
    accents kept), ready for a tokenizer.

    Args:
        name: the task name given to `load_task` (e.g. `"numbers"`).
        source_lang: a label for the source side (e.g. `"en"`).
        target_lang: a label for the target side (e.g. `"de"`).
        train: training pairs.
        validation: validation pairs.
        test: test pairs.
        info: loader-specific details, such as the options used and, for
            `"numbers"`, the integers behind each split (`info["numbers"]["test"]`).

    Example:

    >>> task = Task("toy", "en", "de", train=[("one", "eins")], validation=[], test=[])
    >>> task
    Task(name='toy', en->de, train=1, validation=0, test=0)
    >>> task.split("train")
    [('one', 'eins')]
    """

    name: str
    source_lang: str
    target_lang: str
    train: list[tuple[str, str]]
    validation: list[tuple[str, str]]
    test: list[tuple[str, str]]
    info: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False)

    def split(self, name: str) -> list[tuple[str, str]]:
        """The pairs of split `name`: one of `"train"`, `"validation"`, `"test"`."""
        if name not in SPLITS:
            raise ValueError(f"split={name!r} is not a split; choose one of {list(SPLITS)}")
        return getattr(self, name)

    def __repr__(self) -> str:
        return (
            f"Task(name={self.name!r}, {self.source_lang}->{self.target_lang}, "
            f"train={len(self.train)}, validation={len(self.validation)}, test={len(self.test)})"
        )
