"""The search a run translates with by default: chosen on its validation split, kept in
`decoding.json`, used by `Translator.from_run_dir`, `translate` and `export` unless overridden."""

import json
import logging
import shutil

import pytest

from keras_transformer.cli import main
from keras_transformer.errors import UserInputError
from keras_transformer.inference import Translator
from keras_transformer.inference.decoding import (
    CANDIDATES,
    DECODING_FILE,
    GREEDY,
    Decoding,
    best_decoding,
    choose_decoding,
    load_decoding,
    save_decoding,
)
from keras_transformer.runs import RunDirectory
from tests.helpers import TINY_SOURCES

REFERENCES = [
    "the old man reads a long book today",
    "a small red house stands by the river",
    "we walked along the quiet beach at night",
]
PAIRS = [(f"source {i}", reference) for i, reference in enumerate(REFERENCES)]


def fake_translate(best: Decoding, calls=None):
    """A search that is right only for `best`; the others drop the last three words.
    `calls` collects each `(beam_size, alphas)` asked for."""

    def translate(sources, beam_size, alphas):
        if calls is not None:
            calls.append((beam_size, list(alphas)))
        index = {source: i for i, (source, _) in enumerate(PAIRS)}
        rows = [REFERENCES[index[source]] for source in sources]
        wrong = [" ".join(r.split()[:-3]) for r in rows]
        return [rows if Decoding(beam_size, a) == best else wrong for a in alphas]

    return translate


@pytest.mark.parametrize("best", CANDIDATES)
def test_the_candidate_that_scores_highest_on_validation_is_chosen(best):
    chosen, record = choose_decoding(fake_translate(best), PAIRS)
    assert chosen == best
    assert (record["beam_size"], record["alpha"]) == tuple(best)
    assert record["metric"] == "BLEU" and record["chosen_on"] == "the first 3 validation pairs"
    scores = {(s["beam_size"], s["alpha"]): s["BLEU"] for s in record["scores"]}
    assert scores[tuple(best)] == pytest.approx(100.0)
    assert all(score < 100.0 for key, score in scores.items() if key != tuple(best))


def test_one_search_per_beam_size_ranks_every_alpha():
    calls = []
    choose_decoding(fake_translate(GREEDY, calls), PAIRS)
    sizes = sorted({d.beam_size for d in CANDIDATES})
    assert [beam_size for beam_size, _ in calls] == sizes  # each size searched once
    alphas = {beam_size: alphas for beam_size, alphas in calls}
    assert alphas[4] == [d.alpha for d in CANDIDATES if d.beam_size == 4]


def test_a_tie_keeps_the_cheaper_search():
    assert best_decoding({GREEDY: 30.0, Decoding(4, 0.6): 30.0}) == GREEDY
    assert best_decoding({GREEDY: 30.0, Decoding(4, 0.6): 30.5}) == Decoding(4, 0.6)


def test_chrf_decides_where_references_are_too_short_for_bleu():
    pairs = [("a", "dreihundert"), ("b", "vierzig"), ("c", "elf")]

    def translate(sources, beam_size, alphas):
        right = {"a": "dreihundert", "b": "vierzig", "c": "elf"}
        return [[right[s] if beam_size == 4 else right[s][:-2] for s in sources] for _ in alphas]

    chosen, record = choose_decoding(translate, pairs, [GREEDY, Decoding(4, 0.6)])
    assert record["metric"] == "chrF" and chosen == Decoding(4, 0.6)


def test_no_validation_pairs_is_a_clear_error():
    with pytest.raises(ValueError, match="validation split is empty"):
        choose_decoding(fake_translate(GREEDY), [])


def test_a_run_without_the_file_searches_greedily(tmp_path):
    assert load_decoding(tmp_path) is None


@pytest.mark.parametrize(
    "content", ["{", '{"beam_size": 0, "alpha": 0.6}', '{"alpha": 1}', '{"beam_size": 2.5}']
)
def test_a_damaged_file_is_named_with_the_fix(tmp_path, content):
    (tmp_path / DECODING_FILE).write_text(content)
    with pytest.raises(UserInputError, match=DECODING_FILE + ".*--beam-size"):
        load_decoding(tmp_path)


def test_overwrite_deletes_the_chosen_search_with_the_run(tmp_path):
    save_decoding(tmp_path, {"beam_size": 4, "alpha": 1.0})
    RunDirectory(str(tmp_path)).clear()
    assert not (tmp_path / DECODING_FILE).exists()


@pytest.fixture(scope="module")
def chosen_run(tiny_run, tmp_path_factory):
    """The tiny run with a chosen search of 3 beams at alpha 1.2."""
    run = tmp_path_factory.mktemp("chosen") / "run"
    shutil.copytree(tiny_run, run)
    save_decoding(run, {"beam_size": 3, "alpha": 1.2, "chosen_on": "test"})
    return run


def test_from_run_dir_translates_with_the_runs_search(chosen_run, monkeypatch):
    translator = Translator.from_run_dir(chosen_run)
    assert translator.decoding == Decoding(3, 1.2)
    asked = []
    translate_ranked = Translator.translate_ranked

    def spy(self, texts, beam_size, alphas):
        asked.extend(Decoding(beam_size, alpha) for alpha in alphas)
        return translate_ranked(self, texts, beam_size, alphas)

    monkeypatch.setattr(Translator, "translate_ranked", spy)
    by_default = translator(TINY_SOURCES[:3])
    assert asked == [Decoding(3, 1.2)]
    assert by_default == translator(TINY_SOURCES[:3], beam_size=3, alpha=1.2)
    translator(TINY_SOURCES[:3], beam_size=1)
    assert asked[-1] == GREEDY._replace(alpha=1.2)  # greedy: alpha unused


def test_a_translator_built_by_hand_searches_greedily(chosen_run):
    translator = Translator.from_run_dir(chosen_run)
    built = Translator(
        translator.model,
        translator.source_tokenizer,
        translator.target_tokenizer,
        max_length=translator.max_length,
    )
    assert built.decoding == GREEDY


def test_translate_command_uses_the_runs_search_unless_told(chosen_run, capsys, caplog):
    translator = Translator.from_run_dir(chosen_run)
    texts = TINY_SOURCES[:3]
    with caplog.at_level(logging.INFO, logger="keras_transformer"):
        assert main(["translate", "-v", str(chosen_run), *texts]) == 0
    assert capsys.readouterr().out.splitlines() == translator(texts, beam_size=3, alpha=1.2)
    assert "beam search (3 beams, alpha 1.2)" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="keras_transformer"):
        assert main(["translate", "-v", str(chosen_run), "--beam-size", "1", *texts]) == 0
    assert capsys.readouterr().out.splitlines() == translator(texts, beam_size=1)
    assert "greedy search" in caplog.text


def test_metrics_record_is_what_the_file_holds(tmp_path):
    record = {"beam_size": 4, "alpha": 1.0, "chosen_on": "the first 500 validation pairs"}
    path = save_decoding(tmp_path, record)
    assert json.loads(open(path).read()) == record
    assert load_decoding(tmp_path) == Decoding(4, 1.0)
