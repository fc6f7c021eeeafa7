"""The "tsv" task: a user's parallel corpus, one `source<TAB>target` pair per line.

The file must be UTF-8 (a leading byte-order mark is accepted). Blank lines are
ignored. Lines may hold more than two tab-separated columns, as the Anki/Tatoeba files
do (`spa.txt`: English, Spanish, attribution): `columns=(1, 2)` (1-based, the default)
takes the first two as source and target, `columns=(2, 1)` swaps the direction, and one
note line (a logged warning) says which columns were used. A line is malformed when it
is not valid UTF-8, has fewer columns than `columns` needs, or has an empty side; with
`on_error="raise"` (the default) one `ValueError` gives their count and the first ten
line numbers, with `on_error="skip"` they are left out and a `UserWarning` says the same.
Each side is normalised as every tokenizer input is
(`keras_transformer.data.text.normalize.normalize_text`: NFC, every run of Unicode
whitespace one ASCII space, stripped). Lines may end in CRLF.

The pairs are split by *distinct source sentence*: all pairs sharing a source
land in the same split, so a test source never appears in training. A validation or
test file (`validation_path`, `test_path`) replaces that split of `path`.
"""

from __future__ import annotations

import collections
import logging
import os
import warnings
from collections.abc import Sequence

import numpy as np

from keras_transformer._validation import check_rate, check_seed
from keras_transformer.data.tasks.task import Task
from keras_transformer.data.text.normalize import normalize_text
from keras_transformer.errors import UserInputError

logger = logging.getLogger(__name__)

_SHOWN_LINES = 10
_SMALL_CORPUS = 100  # fewer distinct sources than this: warn that the splits are tiny


def parse_columns(columns: str | Sequence[int]) -> tuple[int, int]:
    """`(source, target)` 1-based column numbers from `"2,1"` or `(2, 1)`.

    >>> parse_columns("2,1"), parse_columns((1, 3))
    ((2, 1), (1, 3))
    """
    text = columns if isinstance(columns, str) else ",".join(map(str, columns))
    parts = [part.strip() for part in text.split(",")]
    if len(parts) != 2 or not all(part.isdigit() and int(part) >= 1 for part in parts):
        raise UserInputError(
            f"columns={text!r} must be two 1-based column numbers, source then target, "
            "e.g. --columns 1,2 (or 2,1 to swap the direction)"
        )
    source, target = int(parts[0]), int(parts[1])
    if source == target:
        raise UserInputError(f"columns={text!r} names column {source} twice; e.g. --columns 1,2")
    return source, target


def read_tsv(
    path: str | os.PathLike, *, on_error: str = "raise", columns: str | Sequence[int] = (1, 2)
) -> list[tuple[str, str]]:
    """Reads `(source, target)` pairs from a UTF-8 tab-separated file.

    Args:
        path: the file, one `source<TAB>target` per line (more columns allowed).
        on_error: `"raise"` to fail on malformed lines (their count and the
            first line numbers), `"skip"` to leave them out with a warning.
        columns: the 1-based columns of source and target, e.g. `(2, 1)` or `"2,1"`.

    Returns:
        The pairs in file order.

    Example:

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "pairs.tsv"
    >>> _ = path.write_text("one\\teins\\n\\ntwo\\tzwei\\n", encoding="utf-8")
    >>> read_tsv(path)
    [('one', 'eins'), ('two', 'zwei')]
    >>> read_tsv(path, columns="2,1")
    [('eins', 'one'), ('zwei', 'two')]
    """
    if on_error not in ("raise", "skip"):
        raise UserInputError(f"on_error={on_error!r} must be 'raise' or 'skip'")
    source_column, target_column = parse_columns(columns)
    needed = max(source_column, target_column)
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"path={path!r} does not exist; pass the path of a UTF-8 file with one "
            "'source<TAB>target' pair per line"
        )
    if os.path.isdir(path):
        raise UserInputError(f"path={path!r} is a directory; pass the .tsv file inside it")
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise UserInputError(
            f"could not read path={path!r} ({error}); check that the file is readable"
        ) from error

    check_text_file(path, data)
    pairs: list[tuple[str, str]] = []
    malformed: list[tuple[int, str]] = []
    widths: collections.Counter = collections.Counter()  # columns per valid line
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
        if len(fields) < needed:
            malformed.append((number, f"{len(fields)} column{'s' * (len(fields) > 1)}"))
            continue
        source = normalize_text(fields[source_column - 1])
        target = normalize_text(fields[target_column - 1])
        if not source or not target:
            malformed.append((number, "empty source" if not source else "empty target"))
            continue
        widths[len(fields)] += 1
        pairs.append((source, target))

    if malformed:
        shown = ", ".join(f"{n} ({why})" for n, why in malformed[:_SHOWN_LINES])
        more = f" and {len(malformed) - _SHOWN_LINES} more" if len(malformed) > _SHOWN_LINES else ""
        if on_error == "raise":
            raise UserInputError(
                f"path={path!r} has {len(malformed)} malformed line(s): {shown}{more}. Each "
                f"line needs {needed} tab-separated columns (source in column {source_column}, "
                f"target in column {target_column}), both non-empty, in UTF-8; fix them, pick "
                "other columns (--columns), or leave them out (--skip-malformed)."
            )
        warnings.warn(
            f"skipped {len(malformed)} malformed line(s) of path={path!r}: {shown}{more}",
            UserWarning,
            stacklevel=2,
        )
    if not pairs:
        raise UserInputError(
            f"path={path!r} holds no valid 'source<TAB>target' pairs; check the file's "
            "contents and that the separator is a tab"
        )
    if max(widths) > 2 or (source_column, target_column) != (1, 2):
        width = widths.most_common(1)[0][0]
        logger.warning(
            "%s: %d columns; using %d (source) and %d (target); --columns picks others",
            os.path.basename(path),
            width,
            source_column,
            target_column,
        )
    return pairs


_SIGNATURES = (  # leading bytes of files people pass by mistake, and what they are
    (b"PK\x03\x04", "a zip archive (an .xlsx, .docx or .ods file is one)"),
    (b"%PDF", "a PDF document"),
    (b"\x1f\x8b", "a gzip-compressed file"),
    (b"\x89HDF", "an HDF5 file (such as .weights.h5)"),
    (b"SQLite format", "an SQLite database"),
    (b"\xd0\xcf\x11\xe0", "an old Microsoft Office file (.xls, .doc)"),
)
_SAMPLE_BYTES = 64 * 1024


def check_text_file(path: str, data: bytes) -> None:
    """`ValueError` naming what `data` (the bytes of `path`) is, when it is no tab-separated
    text: a binary file (a zip, PDF, ... or NUL bytes), UTF-16 text, or comma-separated values
    (CSV: no tab on any line, commas on most). Each says how to get a tab-separated UTF-8 file;
    none is a case for `--skip-malformed`, which would leave out every line.
    (tests/data/tasks/test_tsv.py shows each message.)
    """
    sample = data[:_SAMPLE_BYTES]
    text_hint = "pass a UTF-8 text file with one 'source<TAB>target' pair per line"
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise UserInputError(
            f"path={path!r} is UTF-16 text; save it as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8 "
            f"{path} > pairs.tsv) and {text_hint}."
        )
    for signature, kind in _SIGNATURES:
        if sample.startswith(signature):
            raise UserInputError(f"path={path!r} is {kind}, not text; {text_hint}.")
    if b"\x00" in sample:
        raise UserInputError(
            f"path={path!r} is a binary file (it holds NUL bytes), not text; {text_hint}."
        )
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(sample) - 4 and _mostly_undecodable(sample):
            raise UserInputError(
                f"path={path!r} is not UTF-8 text (a binary file, or text in another encoding "
                f"such as Latin-1: convert it with iconv -t UTF-8); {text_hint}."
            ) from None
    lines = [line for line in sample.decode("utf-8", "replace").splitlines() if line.strip()]
    if lines and not any("\t" in line for line in lines):
        with_commas = sum("," in line for line in lines)
        if with_commas >= max(1, 0.8 * len(lines)):
            first = lines[0].lstrip("\ufeff")[:60]
            name = os.path.splitext(os.path.basename(path))[0] + ".tsv"
            raise UserInputError(
                f"path={path!r} looks like CSV (comma-separated, no tab on any line; first "
                f"line {first!r}, a header?), not tab-separated text; convert it, e.g. python "
                "-c \"import csv,sys; csv.writer(sys.stdout, delimiter='\\t').writerows("
                f"csv.reader(open(sys.argv[1], encoding='utf-8')))\" {path} > {name}, and drop "
                "a header line."
            )


def _mostly_undecodable(sample: bytes) -> bool:
    """Whether more than 1 % of the lines of `sample` are not UTF-8 (one bad line is a
    malformed line; a file of them is another encoding or no text)."""
    lines = [line for line in sample.split(b"\n") if line.strip()]
    bad = 0
    for line in lines:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            bad += 1
    return bad > max(1, 0.01 * len(lines))


def _split(pairs, validation_fraction, test_fraction, seed, path):
    """(train, validation, test) pairs, split by distinct source (see the module docstring)."""
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
        raise UserInputError(
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
            stacklevel=3,
        )
    test_ids = order[:num_test]
    validation_ids = order[num_test : num_test + num_validation]
    train_ids = sorted(order[num_test + num_validation :])  # keep file order in training

    def collect(ids: list[int]) -> list[tuple[str, str]]:
        return [pair for i in ids for pair in groups[sources[i]]]

    return collect(train_ids), collect(validation_ids), collect(test_ids)


def tsv_task(
    *,
    path: str | os.PathLike,
    on_error: str = "raise",
    columns: str | Sequence[int] = (1, 2),
    validation_path: str | os.PathLike | None = None,
    test_path: str | os.PathLike | None = None,
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
        columns: 1-based source and target columns of every file (`"2,1"` swaps).
        validation_path: a file of validation pairs (same format) instead of a
            split of `path`.
        test_path: a file of test pairs instead of a split of `path`. With both
            files, all of `path` trains.
        validation_fraction: share of distinct sources for validation (unless
            `validation_path`).
        test_fraction: share of distinct sources for test (unless `test_path`).
        seed: seed of the shuffle that assigns sources to splits.
        source_lang: label of the source side.
        target_lang: label of the target side.

    Returns:
        A `Task`. Split sizes are rounded counts of distinct sources; training
        keeps the rest and must not be empty.
    """
    check_rate("validation_fraction", validation_fraction)
    check_rate("test_fraction", test_fraction)
    if validation_path is not None:
        validation_fraction = 0.0
    if test_path is not None:
        test_fraction = 0.0
    if validation_fraction + test_fraction >= 1:
        raise UserInputError(
            f"validation_fraction={validation_fraction} + test_fraction={test_fraction} "
            "must be < 1 so that training keeps some pairs"
        )
    check_seed(seed)
    pairs = read_tsv(path, on_error=on_error, columns=columns)
    train, validation, test = _split(pairs, validation_fraction, test_fraction, seed, path)
    files = {"path": os.fspath(path)}
    if validation_path is not None:
        validation = read_tsv(validation_path, on_error=on_error, columns=columns)
        files["validation_path"] = os.fspath(validation_path)
    if test_path is not None:
        test = read_tsv(test_path, on_error=on_error, columns=columns)
        files["test_path"] = os.fspath(test_path)
    return Task(
        name="tsv",
        source_lang=source_lang,
        target_lang=target_lang,
        train=train,
        validation=validation,
        test=test,
        info={**files, "seed": seed, "num_pairs": len(pairs), "columns": parse_columns(columns)},
    )
