"""The "tsv" task: a user's parallel corpus, one `source<TAB>target` pair per line.

The file must be UTF-8 (a leading byte-order mark is accepted). Blank lines are
ignored. A line is malformed when it is not valid UTF-8, does not have exactly
two tab-separated fields, or has an empty side; with `on_error="raise"` (the
default) every malformed line number is reported in one `ValueError`, with
`on_error="skip"` they are left out and a `UserWarning` gives their count and the
first line numbers. Each side is normalised as every tokenizer input is
(`keras_transformer.data.text.normalize.normalize_text`: NFC, every run of Unicode
whitespace one ASCII space, stripped). Lines may end in CRLF.

The pairs are split by *distinct source sentence*: all pairs sharing a source
land in the same split, so a test source never appears in training.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from keras_transformer._validation import check_rate
from keras_transformer.data._checks import check_seed
from keras_transformer.data.tasks.task import Task
from keras_transformer.data.text.normalize import normalize_text

_SHOWN_LINES = 10
_SMALL_CORPUS = 100  # fewer distinct sources than this: warn that the splits are tiny


def read_tsv(path: str | os.PathLike, *, on_error: str = "raise") -> list[tuple[str, str]]:
    """Reads `(source, target)` pairs from a UTF-8 tab-separated file.

    Args:
        path: the file, one `source<TAB>target` per line.
        on_error: `"raise"` to fail on malformed lines (all their numbers are
            listed), `"skip"` to leave them out with a warning.

    Returns:
        The pairs in file order.

    Example:

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "pairs.tsv"
    >>> _ = path.write_text("one\\teins\\n\\ntwo\\tzwei\\n", encoding="utf-8")
    >>> read_tsv(path)
    [('one', 'eins'), ('two', 'zwei')]
    """
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error={on_error!r} must be 'raise' or 'skip'")
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"path={path!r} does not exist; pass the path of a UTF-8 file with one "
            "'source<TAB>target' pair per line"
        )
    if os.path.isdir(path):
        raise ValueError(f"path={path!r} is a directory; pass the .tsv file inside it")
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise ValueError(
            f"could not read path={path!r} ({error}); check that the file is readable"
        ) from error

    pairs: list[tuple[str, str]] = []
    malformed: list[tuple[int, str]] = []
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            malformed.append((number, "not valid UTF-8"))
            continue
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            malformed.append((number, f"{len(fields)} tab-separated fields instead of 2"))
            continue
        source, target = normalize_text(fields[0]), normalize_text(fields[1])
        if not source or not target:
            malformed.append((number, "empty source" if not source else "empty target"))
            continue
        pairs.append((source, target))

    if malformed:
        shown = ", ".join(f"{n} ({why})" for n, why in malformed[:_SHOWN_LINES])
        more = f" and {len(malformed) - _SHOWN_LINES} more" if len(malformed) > _SHOWN_LINES else ""
        numbers = [n for n, _ in malformed]
        if on_error == "raise":
            raise ValueError(
                f"path={path!r} has {len(malformed)} malformed line(s): {shown}{more}. Each "
                "line must be 'source<TAB>target' with both sides non-empty, in UTF-8; fix "
                "them, or leave them out with on_error='skip' (command line: --skip-malformed). "
                "Line numbers: "
                f"{numbers}"
            )
        warnings.warn(
            f"skipped {len(malformed)} malformed line(s) of path={path!r}: {shown}{more}",
            UserWarning,
            stacklevel=2,
        )
    if not pairs:
        raise ValueError(
            f"path={path!r} holds no valid 'source<TAB>target' pairs; check the file's "
            "contents and that the separator is a tab"
        )
    return pairs


def tsv_task(
    *,
    path: str | os.PathLike,
    on_error: str = "raise",
    validation_fraction: float = 0.1,
    test_fraction: float = 0.1,
    seed: int = 0,
    source_lang: str = "source",
    target_lang: str = "target",
) -> Task:
    """A `Task` from a user's tab-separated parallel file.

    Args:
        path: the file, one `source<TAB>target` per line (see `read_tsv`).
        on_error: `"raise"` or `"skip"` for malformed lines.
        validation_fraction: share of distinct sources for validation.
        test_fraction: share of distinct sources for test.
        seed: seed of the shuffle that assigns sources to splits.
        source_lang: label of the source side.
        target_lang: label of the target side.

    Returns:
        A `Task`. Split sizes are rounded counts of distinct sources; training
        keeps the rest and must not be empty.
    """
    check_rate("validation_fraction", validation_fraction)
    check_rate("test_fraction", test_fraction)
    if validation_fraction + test_fraction >= 1:
        raise ValueError(
            f"validation_fraction={validation_fraction} + test_fraction={test_fraction} "
            "must be < 1 so that training keeps some pairs"
        )
    check_seed(seed)
    pairs = read_tsv(path, on_error=on_error)
    groups: dict[str, list[tuple[str, str]]] = {}
    for pair in pairs:
        groups.setdefault(pair[0], []).append(pair)
    sources = list(groups)
    order = np.random.default_rng(seed).permutation(len(sources)).tolist()
    # A small file still gets one validation and one test source when the
    # fractions ask for any (a run needs all three splits), with a warning.
    num_test = max(round(len(sources) * test_fraction), 1 if test_fraction else 0)
    num_validation = max(round(len(sources) * validation_fraction), 1 if validation_fraction else 0)
    if num_test + num_validation >= len(sources):
        raise ValueError(
            f"path={os.fspath(path)!r} has {len(sources)} distinct source(s), too few for "
            f"a training, a validation and a test split; add pairs (at least "
            f"{num_test + num_validation + 1} distinct sources)"
        )
    if len(sources) < _SMALL_CORPUS:
        warnings.warn(
            f"path={os.fspath(path)!r} has only {len(sources)} distinct sources: "
            f"{len(sources) - num_test - num_validation} train, {num_validation} validation, "
            f"{num_test} test; scores on so few pairs mean little",
            UserWarning,
            stacklevel=2,
        )
    test_ids = order[:num_test]
    validation_ids = order[num_test : num_test + num_validation]
    train_ids = sorted(order[num_test + num_validation :])  # keep file order in training

    def collect(ids: list[int]) -> list[tuple[str, str]]:
        return [pair for i in ids for pair in groups[sources[i]]]

    return Task(
        name="tsv",
        source_lang=source_lang,
        target_lang=target_lang,
        train=collect(train_ids),
        validation=collect(validation_ids),
        test=collect(test_ids),
        info={"path": os.fspath(path), "seed": seed, "num_pairs": len(pairs)},
    )
