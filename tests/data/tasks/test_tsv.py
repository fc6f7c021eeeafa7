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
    text = "a\tb\nc\td\nonly one field\nx\ty\n\tempty source\nz\t \tthree\ne\tf\n"
    path = _write(tmp_path, text)
    with pytest.raises(ValueError, match=r"3 malformed") as error:
        read_tsv(path, on_error="raise")
    message = str(error.value)
    assert "3 (1 column), 5 (empty source), 6 (empty target)" in message
    assert "--skip-malformed" in message and "--columns" in message
    assert str(path) in message


def test_skip_mode_warns_with_count_and_line_numbers(tmp_path):
    text = "a\tb\nc\td\nonly one field\nx\ty\n\tempty source\nz\t \tthree\ne\tf\n"
    path = _write(tmp_path, text)
    with pytest.warns(UserWarning, match=r"skipped 3 malformed line\(s\).*3 \(.*5 \(.*6 \("):
        pairs = read_tsv(path, on_error="skip")
    assert pairs == [("a", "b"), ("c", "d"), ("x", "y"), ("e", "f")]


def test_a_file_of_malformed_lines_fails_with_one_short_line(tmp_path):
    # the old error appended every line number: 700 KB for the 101,660 lines of spa.txt
    path = _write(tmp_path, "".join(f"sentence {i} without a tab\n" for i in range(50_000)))
    with pytest.raises(ValueError) as error:
        read_tsv(path)
    message = str(error.value)
    assert "\n" not in message and len(message) < 600, message
    assert "50000 malformed line(s): 1 (1 column), 2 (1 column)" in message
    assert "10 (1 column) and 49990 more" in message and "11 (" not in message


def test_anki_layout_uses_the_first_two_columns_with_one_note(tmp_path, caplog):
    lines = [
        f"Go {i}.\tVe {i}.\tCC-BY 2.0 (France) Attribution: tatoeba.org #{i}" for i in range(5)
    ]
    path = _write(tmp_path, "\n".join(lines) + "\n", name="spa.txt")
    with caplog.at_level("WARNING", logger="keras_transformer"):
        pairs = read_tsv(path)
    assert pairs[:2] == [("Go 0.", "Ve 0."), ("Go 1.", "Ve 1.")]
    notes = [r.getMessage() for r in caplog.records]
    assert notes == ["spa.txt: 3 columns; using 1 (source) and 2 (target); --columns picks others"]


def test_columns_pick_and_swap_sides_and_bad_columns_are_one_line(tmp_path, caplog):
    path = _write(tmp_path, "one\teins\tattribution\ntwo\tzwei\tattribution\n")
    assert read_tsv(path, columns="2,1") == [("eins", "one"), ("zwei", "two")]
    assert read_tsv(path, columns=(3, 1))[0] == ("attribution", "one")
    with pytest.raises(ValueError, match=r"4 malformed.*1 \(3 columns\)"):
        read_tsv(_write(tmp_path, "a\tb\tc\n" * 4, name="x.tsv"), columns="1,4")
    for bad in ("2,2", "0,1", "1", "a,b", "1,2,3"):
        with pytest.raises(ValueError, match=f"columns='{bad}'"):
            read_tsv(path, columns=bad)


def test_a_two_column_file_gives_no_note(tmp_path, caplog):
    path = _write(tmp_path, "one\teins\ntwo\tzwei\n")
    with caplog.at_level("INFO", logger="keras_transformer"):
        read_tsv(path)
    assert not caplog.records


def test_validation_and_test_files_replace_their_splits(tmp_path):
    path = _write(tmp_path, "".join(f"s{i}\tt{i}\n" for i in range(200)))
    validation = _write(tmp_path, "v1\tw1\nv2\tw2\n", name="valid.tsv")
    test = _write(tmp_path, "x1\ty1\tnote\n", name="test.tsv")
    both = tsv_task(path=path, validation_path=validation, test_path=test)
    assert len(both.train) == 200  # all of --data trains
    assert both.validation == [("v1", "w1"), ("v2", "w2")] and both.test == [("x1", "y1")]
    only_test = tsv_task(path=path, test_path=test, validation_fraction=0.1)
    assert (len(only_test.train), len(only_test.validation)) == (180, 20)
    assert only_test.test == [("x1", "y1")]
    assert not {s for s, _ in only_test.validation} & {s for s, _ in only_test.train}


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


def test_a_100k_line_anki_file_loads_splits_and_learns_with_one_note(tmp_path, caplog):
    from keras_transformer.data import WordPieceTokenizer

    words = ["red", "house", "small", "dog", "river", "station", "book", "green", "cold", "tea"]
    lines = [
        f"The {words[i % 10]} {words[i // 10 % 10]} number {i}.\tEl {words[i // 100 % 10]} "
        f"número {i}.\tCC-BY 2.0 (France) Attribution: tatoeba.org #{i} (someone)"
        for i in range(100_000)
    ]
    path = _write(tmp_path, "\n".join(lines) + "\n", name="spa.txt")
    with caplog.at_level("INFO", logger="keras_transformer"):
        task = tsv_task(path=path)
    assert (len(task.train), len(task.validation), len(task.test)) == (80_000, 10_000, 10_000)
    assert [r.getMessage() for r in caplog.records] == [
        "spa.txt: 3 columns; using 1 (source) and 2 (target); --columns picks others"
    ]
    tokenizer = WordPieceTokenizer.learn([t for _, t in task.train[:20_000]], 1000)
    assert tokenizer.vocab_size > 100


# Files that are no tab-separated text: named for what they are, not as malformed lines.


def test_a_csv_file_with_a_header_is_named_as_csv_with_how_to_convert(tmp_path):
    text = "english,spanish\n" + "".join(f"sentence {i},frase {i}\n" for i in range(300))
    path = _write(tmp_path, text, name="pairs.csv")
    for on_error in ("raise", "skip"):  # --skip-malformed would leave out every line
        with pytest.raises(ValueError) as error:
            read_tsv(path, on_error=on_error)
        message = str(error.value)
        assert "\n" not in message and "malformed" not in message, message
        assert "looks like CSV" in message and "'english,spanish', a header?" in message
        assert "delimiter='\\t'" in message and "pairs.tsv" in message


@pytest.mark.parametrize(
    ("content", "named"),
    [
        (b"PK\x03\x04" + bytes(range(256)) * 4, "a zip archive"),
        (b"%PDF-1.7\n" + bytes(range(256)) * 4, "a PDF document"),
        (b"\x1f\x8b\x08\x00" + bytes(range(256)), "a gzip-compressed file"),
        (b"\x89HDF\r\n\x1a\n" + bytes(64), "an HDF5 file"),
        (b"\x7fELF\x02\x01\x01" + bytes(64), "a binary file (it holds NUL bytes)"),
        ("one\tuno\ntwo\tdos\n".encode("utf-16"), "UTF-16 text"),
        (("caf\xe9\tcoffee\n" * 50).encode("latin-1"), "not UTF-8 text"),
    ],
)
def test_a_binary_or_non_utf8_file_is_named_as_such(tmp_path, content, named):
    path = _write(tmp_path, content, name="pairs.tsv")
    with pytest.raises(ValueError) as error:
        read_tsv(path, on_error="skip")
    message = str(error.value)
    assert named in message and "\n" not in message, message
    assert "--skip-malformed" not in message and "malformed" not in message


def test_a_tab_separated_file_with_commas_is_not_csv(tmp_path):
    path = _write(tmp_path, "Hello, world.\tHola, mundo.\nYes, sir.\tSí, señor.\n")
    assert read_tsv(path) == [("Hello, world.", "Hola, mundo."), ("Yes, sir.", "Sí, señor.")]


def test_cli_names_a_csv_in_one_line_exit_2_and_writes_nothing(tmp_path, capsys):
    from keras_transformer.cli import main

    csv_file = _write(tmp_path, "en,es\nhello,hola\nbye,adios\n", name="pairs.csv")
    out = tmp_path / "run"
    assert main(["train", "--data", str(csv_file), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "looks like CSV" in err, err
    assert not out.exists()


def test_train_data_without_task_means_task_tsv(tmp_path, monkeypatch, capsys):
    from keras_transformer.cli import main

    seen = []

    def fake_train(config, **kwargs):
        seen.append(config)
        return {"samples": []}

    monkeypatch.setattr("keras_transformer.training.run.train", fake_train)
    path = _write(tmp_path, "one\tuno\n")
    assert main(["train", "--data", str(path), "--out", str(tmp_path / "r")]) == 0
    assert seen[0].task == "tsv" and seen[0].data == str(path)
    assert main(["train", "--task", "numbers", "--data", str(path)]) == 0
    assert seen[1].task == "numbers"  # a --task given wins (and task_options refuses --data)
