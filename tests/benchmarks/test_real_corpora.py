"""`benchmarks/real_corpora.py` (prepare, corpus lookup, scores, table) and its keras-io recipe.

The scripts live beside the package in a clone, not inside it: these tests load
them by path and are skipped where the folder is absent (an installed wheel).
All data is generated here.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import zipfile

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"
pytestmark = pytest.mark.skipif(
    not (BENCHMARKS / "real_corpora.py").is_file(), reason="benchmarks/ is not here"
)


def _load(name):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rc():
    return _load("real_corpora")


def _read(path):
    return [tuple(line.split("\t")) for line in path.read_text(encoding="utf-8").splitlines()]


ANKI_LINES = [
    "Go.\tVe.\tCC-BY 2.0 (France) Attribution: tatoeba.org #1 (a) & #2 (b)",
    "Who are you?\t¿Quién eres?\tCC-BY 2.0 (France) Attribution: tatoeba.org #3 (c)",
    "",
    "I see.\tYa veo.",
]
ANKI_PAIRS = [("Go.", "Ve."), ("Who are you?", "¿Quién eres?"), ("I see.", "Ya veo.")]


def test_prepare_anki_txt_keeps_the_first_two_columns(rc, tmp_path):
    source = tmp_path / "spa.txt"
    source.write_bytes(("\ufeff" + "\r\n".join(ANKI_LINES) + "\r\n").encode("utf-8"))
    rc.main(["prepare", "--anki", str(source), "--name", "anki-en-es", "--out", str(tmp_path)])
    assert _read(tmp_path / "anki-en-es" / "pairs.tsv") == ANKI_PAIRS
    assert "3 pairs" in (tmp_path / "anki-en-es" / "PROVENANCE.md").read_text()


def test_prepare_anki_zip_reads_the_pairs_not_the_about_file(rc, tmp_path):
    archive = tmp_path / "spa-eng.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("_about.txt", "About these files\n" * 200)
        handle.writestr("spa-eng/spa.txt", "\n".join(ANKI_LINES) + "\n")
    path = rc.prepare_anki(str(archive), str(tmp_path / "out"), "anki-en-es")
    assert _read(pathlib.Path(path)) == ANKI_PAIRS
    assert "spa-eng/spa.txt" in (tmp_path / "out" / "anki-en-es" / "PROVENANCE.md").read_text()


def test_prepare_anki_malformed_lines_fail_with_one_short_line(rc, tmp_path, capsys):
    source = tmp_path / "bad.txt"
    lines = ["Go.\tVe."] + [f"no tab here {i}" for i in range(50)] + ["a\tb\tc\td"]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit) as caught:
        rc.main(["prepare", "--anki", str(source), "--name", "x", "--out", str(tmp_path)])
    message = str(caught.value)
    assert "51 line(s)" in message and "line(s) 2, 3, 4, 5, 6;" in message
    assert "\n" not in message and len(message) < 300
    assert not (tmp_path / "x").exists()


def test_prepare_needs_a_name_for_anki(rc, tmp_path, capsys):
    with pytest.raises(SystemExit):
        rc.main(["prepare", "--anki", str(tmp_path / "spa.txt"), "--out", str(tmp_path)])
    assert "--name" in capsys.readouterr().err


def test_prepare_moses_pools_detokenises_and_drops_empty_lines(rc, tmp_path):
    files = {
        "a.en": "that &apos;s our room , isn &apos;t it ?\n\nhe said &quot; yes &quot; .\n",
        "a.es": "es nuestra habitación , ¿ no ?\nvacío\ndijo &quot; sí &quot; .\n",
        "b.en": "( twice ) .\n",
        "b.es": "( dos veces ) .\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    args = ["prepare", "--moses"] + [str(tmp_path / n) for n in ("a.en", "a.es", "b.en", "b.es")]
    rc.main(args + ["--langs", "en", "es", "--name", "news-en-es", "--out", str(tmp_path)])
    assert _read(tmp_path / "news-en-es" / "pairs.tsv") == [
        ("that's our room, isn't it?", "es nuestra habitación, ¿ no?"),
        ('he said "yes".', 'dijo "sí".'),
        ("(twice).", "(dos veces)."),
    ]


def test_prepare_moses_refuses_files_that_are_not_aligned(rc, tmp_path):
    (tmp_path / "a.en").write_text("one\ntwo\n", encoding="utf-8")
    (tmp_path / "a.es").write_text("uno\n", encoding="utf-8")
    with pytest.raises(ValueError, match="2 and 1 lines"):
        rc.prepare_moses([str(tmp_path / "a.en"), str(tmp_path / "a.es")], ["en", "es"], "o", "n")
    with pytest.raises(ValueError, match="SRC TGT pairs"):
        rc.prepare_moses([str(tmp_path / "a.en")], ["en", "es"], "o", "n")


def test_corpus_path_reads_names_and_the_sated_layout(rc, tmp_path):
    for folder in ("anki-en-es", "sated_en-de"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "pairs.tsv").write_text("a\tb\n")
    assert rc.corpus_path(str(tmp_path), "anki-en-es") == str(tmp_path / "anki-en-es/pairs.tsv")
    assert rc.corpus_path(str(tmp_path), "en-de") == str(tmp_path / "sated_en-de/pairs.tsv")
    with pytest.raises(FileNotFoundError, match="sated_en-fr"):
        rc.corpus_path(str(tmp_path), "en-fr")


def test_normalised_bleu_ignores_case_and_punctuation_only(rc):
    import sacrebleu

    references = ["¿Dónde está la estación?", "¡Tom, ven aquí!", "Ella come una manzana."]
    outputs = ["dónde está la estación", "tom ven aquí", "ella come una pera"]
    result = rc.score(outputs, references)
    expected = sacrebleu.corpus_bleu(
        outputs, [["dónde está la estación", "tom ven aquí", "ella come una manzana"]]
    ).score
    assert result["bleu_normalised"] == pytest.approx(expected)
    assert 40 < result["bleu_normalised"] < 100
    assert result["bleu"] < result["bleu_normalised"] / 2  # raw: case and punctuation count
    assert rc.score(references, references)["bleu_normalised"] == pytest.approx(100)


def test_table_lists_the_three_recipes_in_order_with_the_normalised_column(rc):
    row = {"bleu": 1, "chrf": 2, "bleu_normalised": 3, "stutter": 0, "repeated_4grams": 0}
    train = {"parameters": 2e6, "epochs": 1}
    entry = {r: {"train": train, "test": {"greedy": row}} for r in ("ours", "kerasio", "tutorial")}
    lines = rc.table({"anki-en-es": entry}, 600).splitlines()
    assert "BLEU (normalised)" in lines[2]
    assert [line.split("|")[2].strip() for line in lines[4:]] == ["tutorial", "kerasio", "ours"]
    assert lines[2].count("|") == lines[4].count("|")


WORDS_EN = "the cat dog sees eats a big small red green house tree runs".split()
WORDS_ES = "el gato perro ve come un grande pequeño rojo verde casa árbol corre".split()


def _pairs(n):
    import random

    rng = random.Random(0)
    pairs = []
    for _ in range(n):
        picks = [rng.randrange(len(WORDS_EN)) for _ in range(rng.randint(2, 6))]
        pairs.append(
            (
                " ".join(WORDS_EN[i] for i in picks).capitalize() + ".",
                "¿" + " ".join(WORDS_ES[i] for i in picks) + "?",
            )
        )
    return pairs


def test_kerasio_trains_and_batched_decoding_equals_the_examples_loop():
    kerasio = _load("kerasio_recipe")
    pairs = _pairs(200)
    logs = []
    sizes = {"vocab_size": 12, "embed_dim": 8, "latent_dim": 16, "num_heads": 2}
    bundle, info = kerasio.train_kerasio(
        pairs[:160], pairs[160:], 1.0, seed=0, log=logs.append, model_sizes=sizes
    )
    assert info["stopped_by_time_budget"] and info["steps"] >= 1 and info["epochs"] >= 1
    assert info["vocab_size"] == [12, 12] and logs[0].startswith("  kerasio: ")
    _, eng, spa = bundle
    assert spa(["[start] ¿El gato, come? [end]"]).shape == (1, 21)
    assert "[start]" in spa.get_vocabulary() and "¿el" not in spa.get_vocabulary()
    sources = [s for s, _ in pairs[160:167]]
    batched = kerasio.kerasio_translate(bundle, sources, batch_size=3)
    framed = [kerasio.decode_one(bundle, s) for s in sources]
    assert batched == [kerasio._clean(t) for t in framed]
    assert all(t.startswith("[start]") for t in framed)
    assert not any(t.startswith("[start]") or t.endswith("[end]") for t in batched)


def test_kerasio_clean_strips_only_the_frame():
    kerasio = _load("kerasio_recipe")
    assert kerasio._clean("[start] ella  come [UNK] [end]") == "ella come [UNK]"
    assert kerasio._clean("[start] sin fin") == "sin fin"
    assert kerasio._token(["", "[UNK]", "a"], 7) == "[UNK]"
