"""User TSV files: parsing, malformed lines in both modes, splits by source."""

import pytest

from keras_transformer.data.tasks.tsv import read_tsv, tsv_task


def _write(tmp_path, text, name="pairs.tsv"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def test_reads_pairs_keeping_text_and_ignoring_blank_lines(tmp_path):
    path = _write(tmp_path, "\ufeffone\teins\r\n\n  \ntwenty-four\tvierundzwanzig\nfünf \t five\n")
    assert read_tsv(path) == [
        ("one", "eins"),
        ("twenty-four", "vierundzwanzig"),
        ("fünf", "five"),
    ]


def test_malformed_lines_raise_with_their_line_numbers(tmp_path):
    text = "a\tb\nc\td\nonly one field\nx\ty\n\tempty source\nz\tw\tthree\ne\tf\n"
    path = _write(tmp_path, text)
    with pytest.raises(ValueError, match=r"3 malformed") as error:
        read_tsv(path, on_error="raise")
    message = str(error.value)
    assert "[3, 5, 6]" in message and "on_error='skip'" in message
    assert str(path) in message


def test_skip_mode_warns_with_count_and_line_numbers(tmp_path):
    text = "a\tb\nc\td\nonly one field\nx\ty\n\tempty source\nz\tw\tthree\ne\tf\n"
    path = _write(tmp_path, text)
    with pytest.warns(UserWarning, match=r"skipped 3 malformed line\(s\).*3 \(.*5 \(.*6 \("):
        pairs = read_tsv(path, on_error="skip")
    assert pairs == [("a", "b"), ("c", "d"), ("x", "y"), ("e", "f")]


def test_invalid_utf8_line_is_malformed(tmp_path):
    path = _write(tmp_path, b"a\tb\n\xff\xfe\tx\nc\td\n")
    with pytest.raises(ValueError, match=r"2 \(not valid UTF-8\)"):
        read_tsv(path)


def test_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "nope.tsv"
    with pytest.raises(FileNotFoundError, match="nope.tsv"):
        read_tsv(missing)
    with pytest.raises(ValueError, match="directory"):
        read_tsv(tmp_path)


@pytest.mark.parametrize("text", ["", "\n\n"])
def test_no_valid_pairs_is_an_error(tmp_path, text):
    path = _write(tmp_path, text)
    with pytest.raises(ValueError, match="no valid"):
        read_tsv(path)


def test_only_malformed_lines_skipped_leaves_no_pairs(tmp_path):
    path = _write(tmp_path, "no tab here\n")
    with pytest.warns(UserWarning, match="skipped 1"), pytest.raises(ValueError, match="no valid"):
        read_tsv(path, on_error="skip")


def test_task_splits_by_source_and_is_seeded(tmp_path):
    lines = [f"s{i}\tt{i}" for i in range(100)] + ["s7\tanother translation of s7"]
    path = _write(tmp_path, "\n".join(lines) + "\n")
    task = tsv_task(path=path, validation_fraction=0.1, test_fraction=0.2, seed=0)
    assert (len(task.validation), task.info["num_pairs"]) == (10, 101)
    assert len(task.train) + len(task.validation) + len(task.test) == 101
    splits = [{s for s, _ in getattr(task, n)} for n in ("train", "validation", "test")]
    assert not splits[0] & splits[1] and not splits[0] & splits[2] and not splits[1] & splits[2]
    owner = [n for n, sources in zip("tvx", splits, strict=True) if "s7" in sources]
    assert (
        len(owner) == 1
        and sum(
            s == "s7"
            for s, _ in getattr(task, {"t": "train", "v": "validation", "x": "test"}[owner[0]])
        )
        == 2
    )
    assert tsv_task(path=path, seed=0) == tsv_task(path=path, seed=0)
    assert tsv_task(path=path, seed=0).test != tsv_task(path=path, seed=1).test


def test_task_argument_errors(tmp_path):
    path = _write(tmp_path, "a\tb\nc\td\n")
    with pytest.raises(ValueError, match="validation_fraction=1.5"):
        tsv_task(path=path, validation_fraction=1.5)
    with pytest.raises(ValueError, match="must be < 1"):
        tsv_task(path=path, validation_fraction=0.5, test_fraction=0.5)
    with pytest.raises(ValueError, match="too few"):
        tsv_task(path=path, validation_fraction=0.5, test_fraction=0.4)
    with pytest.raises(ValueError, match="on_error='ignore'"):
        tsv_task(path=path, on_error="ignore")


@pytest.mark.parametrize("num_pairs", [3, 5, 10])
def test_small_files_still_get_every_split_with_a_warning(tmp_path, num_pairs):
    path = _write(tmp_path, "".join(f"s{i}\tt{i}\n" for i in range(num_pairs)))
    with pytest.warns(UserWarning, match=f"only {num_pairs} distinct sources"):
        task = tsv_task(path=path)
    assert (len(task.validation), len(task.test)) == (1, 1)
    assert len(task.train) == num_pairs - 2


def test_two_sources_are_too_few_and_the_error_says_how_many_are_needed(tmp_path):
    path = _write(tmp_path, "a\tb\nc\td\n")
    with pytest.raises(ValueError, match="at least 3 distinct sources"):
        tsv_task(path=path)
