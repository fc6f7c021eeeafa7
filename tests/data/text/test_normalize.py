"""Text normalisation: Python and graph versions agree; any Unicode text round-trips.

The property tests generate random Unicode strings (hypothesis) and check that
`detokenize(tokenize(s)) == normalize_text(s)`: everything is kept except what
the normalisation defines (NFC, whitespace runs -> one ASCII space), eagerly and
through a SavedModel.
"""

import unicodedata

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keras_transformer.data.tasks.tsv import read_tsv
from keras_transformer.data.text.normalize import normalize_text, normalize_text_tensor
from keras_transformer.data.text.tokenizer import RESERVED_TOKENS, WordPieceTokenizer, count_words
from tests.helpers import decoded, round_trip_module

ALL_CODE_POINTS = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
UNICODE_SPACES = ["\u00a0", "\u202f", "\u2009", "\u3000", "\u2028", "\u1680", "\x85", "\x1c"]

# Characters real corpora hold: every Unicode space, combining accents, emoji with
# the zero-width joiner and variation selectors, Arabic and Hebrew (right to left),
# CJK, Hangul jamo (NFC composes them), and anything else outside the surrogates.
_interesting = st.sampled_from(
    [c for c in ALL_CODE_POINTS if c.isspace()]
    + [chr(c) for c in range(0x300, 0x370)]  # combining diacritics
    + ["\u200d", "\ufe0f", "\U0001f469", "\U0001f467", "\U0001f44d", "\U0001f3fd"]
    + ["\u0645", "\u0631", "\u062d", "\u0628", "\u0627", "\u05e9", "\u05dc", "\u200f"]
    + ["\u4f60", "\u597d", "\u3002", "\u1100", "\u1161", "\u11a8", "e", "A", "#", "["]
)
_text = st.text(
    alphabet=st.one_of(_interesting, st.characters(exclude_categories=("Cs",))), max_size=24
)


def _char_tokenizer(texts):
    """A tokenizer whose pieces are exactly the characters of the normalised texts."""
    chars = sorted({c for t in texts for c in normalize_text(t) if c != " "}) or ["x"]
    return WordPieceTokenizer([*RESERVED_TOKENS, *chars, *("##" + c for c in chars)])


def test_whitespace_set_is_pythons_in_both_versions():
    padded = tf.constant(["a" + c + "b" for c in ALL_CODE_POINTS])
    graph = normalize_text_tensor(padded).numpy()
    split_by_graph = {c for c, out in zip(ALL_CODE_POINTS, graph, strict=True) if out == b"a b"}
    assert split_by_graph == {c for c in ALL_CODE_POINTS if c.isspace()}
    assert len(split_by_graph) == 29
    # The graph's NFC (ICU) agrees with Python's on every single code point.
    python = [normalize_text("a" + c + "b").encode("utf-8") for c in ALL_CODE_POINTS]
    assert [c for c, g, p in zip(ALL_CODE_POINTS, graph, python, strict=True) if g != p] == []


@pytest.mark.parametrize("space", UNICODE_SPACES)
def test_unicode_spaces_split_words_instead_of_bytes(space):
    text = f"Nummer{space}28 Quoi{space}?"
    assert normalize_text(text) == "Nummer 28 Quoi ?"
    assert count_words([text]) == {"Nummer": 1, "28": 1, "Quoi": 1, "?": 1}
    tokenizer = WordPieceTokenizer.learn([text], vocab_size=40)
    assert decoded(tokenizer.detokenize(tokenizer.tokenize([text]))) == ["Nummer 28 Quoi ?"]


def test_nfc_not_nfkc():
    decomposed = "e\u0301te\u0301"  # e + combining acute accent
    assert normalize_text(decomposed) == "\u00e9t\u00e9"
    assert normalize_text("m\u00b2 \ufb01n") == "m\u00b2 \ufb01n"  # NFKC would give "m2 fin"
    assert decoded(normalize_text_tensor(tf.constant([decomposed, "m\u00b2"]))) == [
        "\u00e9t\u00e9",
        "m\u00b2",
    ]


def test_invalid_utf8_bytes_in_the_graph_become_replacement_characters():
    out = decoded(normalize_text_tensor(tf.constant([b"ok\xc2 \xff\xfeend"])))
    assert out == ["ok\ufffd \ufffd\ufffdend"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_text, min_size=1, max_size=6))
def test_graph_normalisation_equals_python(texts):
    assert decoded(normalize_text_tensor(tf.constant(texts))) == [normalize_text(t) for t in texts]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_text, min_size=1, max_size=8))
def test_round_trip_keeps_everything_but_the_normalisation(texts):
    tokenizer = _char_tokenizer(texts)
    ids = tokenizer.tokenize(tf.constant(texts))
    assert not np.isin(ids.flat_values.numpy(), [tokenizer.unk_id]).any()
    assert decoded(tokenizer.detokenize(ids)) == [normalize_text(t) for t in texts]


def test_a_word_starting_with_the_continuation_mark_is_kept():
    # Found by the round-trip property: the word "##0" used to be read as the continuation
    # piece "##0" and glued to the word before it ("abc ##0" -> "abc0").
    vocab = [*RESERVED_TOKENS, "abc", "0", "#", "##0", "###", "##abc"]
    tokenizer = WordPieceTokenizer(vocab)
    texts = ["abc ##0", "##0", "###0 ##abc", "##"]
    ids = tokenizer.tokenize(tf.constant(texts))
    pieces = [[vocab[i] for i in row] for row in ids.to_list()]
    assert pieces == [
        ["abc", "#", "###", "##0"],
        ["#", "###", "##0"],
        ["#", "###", "###", "##0", "#", "###", "##abc"],
        ["#", "###"],
    ]
    assert decoded(tokenizer.detokenize(ids)) == texts


def test_reserved_tokens_inside_a_word_are_spelled_in_pieces():
    vocab = [*RESERVED_TOKENS, "x", "[", "##[", "##P", "##A", "##D", "##]"]
    tokenizer = WordPieceTokenizer(vocab)
    ids = tokenizer.tokenize(tf.constant(["x[PAD] [PAD]"])).to_list()[0]
    assert [vocab[i] for i in ids] == [
        "x",
        "##[",
        "##P",
        "##A",
        "##D",
        "##]",
        "[",
        "##P",
        "##A",
        "##D",
        "##]",
    ]


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_text, min_size=4, max_size=12))
def test_round_trip_through_a_saved_model(tmp_path_factory, texts):
    path = str(tmp_path_factory.mktemp("served"))
    tf.saved_model.save(round_trip_module(_char_tokenizer(texts)), path)
    served = tf.saved_model.load(path)
    assert decoded(served(tf.constant(texts))) == [normalize_text(t) for t in texts]


def test_tsv_with_bom_crlf_unicode_spaces_and_scripts(tmp_path):
    lines = [
        "\ufeffQuoi\u202f? Nummer\u00a028\tWas\u2009? Nummer\u300028",
        "cafe\u0301 \U0001f469\u200d\U0001f467\t\u0645\u0631\u062d\u0628\u0627 \u4f60\u597d",
    ]
    path = tmp_path / "pairs.tsv"
    path.write_bytes("\r\n".join(lines).encode("utf-8") + b"\r\n")
    assert read_tsv(path) == [
        ("Quoi ? Nummer 28", "Was ? Nummer 28"),
        ("caf\u00e9 \U0001f469\u200d\U0001f467", "\u0645\u0631\u062d\u0628\u0627 \u4f60\u597d"),
    ]
    assert all(unicodedata.is_normalized("NFC", s) for pair in read_tsv(path) for s in pair)


def test_normalize_text_rejects_nondecoded():
    with pytest.raises(TypeError, match="pass a str"):
        normalize_text(b"bytes")
