"""load_corpus: a generated corpus by name or the normalised lines of a user's file."""

import pytest

from keras_transformer.data.tasks.corpus import GENERATED_CORPORA, load_corpus, read_text_file
from keras_transformer.data.tasks.reviews import reviews_corpus


def test_corpus_from_a_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("first   text\n\n   \nsecond text\n", encoding="utf-8")
    assert load_corpus(str(path)) == ["first text", "second text"]
    assert len(load_corpus("reviews", num_sentences=7, seed=1)) == 7
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_text_file(tmp_path / "missing.txt")
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(ValueError, match="holds no text"):
        read_text_file(tmp_path / "empty.txt")
    (tmp_path / "latin1.txt").write_bytes("ok\nfünf\n".encode("latin-1"))
    with pytest.raises(ValueError, match="line 2 is not valid UTF-8"):
        read_text_file(tmp_path / "latin1.txt")


def test_generated_corpus_is_the_reviews_corpus_and_checks_its_arguments():
    assert GENERATED_CORPORA == ("reviews",)
    assert load_corpus("reviews", num_sentences=5, seed=3) == reviews_corpus(5, seed=3)
    with pytest.raises(ValueError, match="num_sentences"):
        load_corpus("reviews", num_sentences=0)
    with pytest.raises(TypeError, match="seed must be an integer; received seed=0.5"):
        load_corpus("reviews", seed=0.5)
