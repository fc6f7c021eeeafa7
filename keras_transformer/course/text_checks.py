"""Checkers of notebook 13 on text: WordPiece tokenization (greedy longest-match-first) and
corpus BLEU (clipped n-gram precisions and the brevity penalty).

Each compares the student's code with the library the package uses for that step
(tensorflow-text's `WordpieceTokenizer`, sacrebleu) on cases the notebook does not show, and
names the mistake by running a plain-Python version of the step with each classic mistake
switched in."""

from __future__ import annotations

import functools
import math
from collections import Counter

import numpy as np

from keras_transformer.course.checking import (
    as_array,
    fail,
    run,
    student_facing,
)

# --------------------------------------------------------------------------------------------
# 1. WordPiece: greedy longest-match-first


UNKNOWN = "[UNK]"
JOINER = "##"


def wordpiece_pieces(word: str, vocab, mistake: str | None = None) -> list[str]:
    """WordPiece of one word, greedy longest-match-first (BERT's, tensorflow-text's), in Python.

    `mistake` switches in one of `WORDPIECE_MISTAKES`.

    >>> wordpiece_pieces("unaffable", {"un", "##aff", "##able", "##a"})
    ['un', '##aff', '##able']
    >>> wordpiece_pieces("unx", {"un", "##aff"})
    ['[UNK]']
    """
    pieces, start = [], 0
    while start < len(word):
        lengths = range(len(word), start, -1)
        if mistake == "shortest":
            lengths = range(start + 1, len(word) + 1)
        elif mistake == "no_single":
            lengths = range(len(word), start + 1, -1)
        found = None
        for end in lengths:
            piece = word[start:end]
            marked = (
                JOINER + piece
                if (start > 0 and mistake not in ("no_joiner", "joiner_lookup_only"))
                or mistake == "joiner_first"
                else piece
            )
            if marked in vocab:
                found = marked
                if mistake == "joiner_output_only":  # looked up with ##, written without
                    found = piece
                if mistake == "joiner_lookup_only" and start > 0:  # looked up bare, written ##
                    found = JOINER + piece
                break
        if found is None:
            if mistake == "unk_part":
                pieces.append(UNKNOWN)
                start += 1
                continue
            if mistake == "unk_rest":
                return [*pieces, UNKNOWN]
            if mistake == "skip":
                start += 1
                continue
            if mistake == "empty":
                return []
            return [UNKNOWN]
        pieces.append(found)
        start = end
    return pieces


WORDPIECE_MISTAKES = {
    "shortest": "shortest match first: at each position take the LONGEST piece of the "
    "vocabulary that starts there (try the whole rest of the word, then one character less, "
    "and so on)",
    "no_single": "one-character pieces are never tried: the candidate piece shrinks down to "
    "ONE character (end = start + 1) before the word is given up as [UNK]",
    "no_joiner": "the pieces after the first are looked up and written without '##': a piece "
    "that does not start the word is the vocabulary entry '##' + piece",
    "joiner_output_only": "the pieces after the first are looked up with '##' but written "
    "without it: return the vocabulary entry, '##' included, so that the pieces can be "
    "joined back into the word",
    "joiner_lookup_only": "the pieces after the first are looked up without '##' (then "
    "written with it): look up '##' + piece, the entry for a piece inside a word",
    "joiner_first": "the first piece is looked up with '##': only the pieces after the "
    "first carry the '##' prefix",
    "unk_part": "[UNK] for the unmatched character only: when no piece matches at some "
    "position, the WHOLE word becomes the single piece [UNK] (the pieces found before are "
    "dropped)",
    "unk_rest": "the pieces found before the unmatched position are kept, then [UNK]: when no "
    "piece matches at some position, the whole word becomes the single piece [UNK]",
    "skip": "an unmatched character is skipped: when no piece matches at some position, the "
    "whole word becomes the single piece [UNK]",
    "empty": "a word with no tokenization gives []; it gives ['[UNK]'], one piece",
}

_WP_START = (
    "un re in pre play read walk talk work do the a i t r w p u n o e s d k l h g b c m f y "
    "under over un unde reader walker worker"
).split()
_WP_CONTINUE = (
    "s ed ing er ers able ly ness less ful do play read work walk e d r i n g a l y k o t "
    "h p w u m erly ings"
).split()
CHECK_VOCAB = frozenset(["[PAD]", UNKNOWN] + _WP_START + [JOINER + piece for piece in _WP_CONTINUE])
"""The checker's vocabulary (the notebook shows another): no '##c', '##b', '##f', '##q',
'##x', '##z' or 'q', 'x', 'z', so some words have no tokenization."""


def _check_words() -> list[str]:
    words = (
        "unplayable replaying workers undo redo reader readers walked talking kindness the "
        "there doable unreadable overworked underdog playfully headless helpful a i x qi "
        "redx unbox walkerly worker workerlings reading preplay dobby inn oh".split()
    )
    rng = np.random.default_rng(13)
    letters = list("abcdefghiklmnoprstuwyqxz")
    for _ in range(150):
        parts = [str(rng.choice(_WP_START))]
        parts += [str(rng.choice(_WP_CONTINUE)) for _ in range(int(rng.integers(0, 4)))]
        if rng.random() < 0.3:  # a character that may have no piece here
            where = int(rng.integers(0, len(parts) + 1))
            parts.insert(where, str(rng.choice(letters)))
        words.append("".join(parts))
    for _ in range(40):
        words.append("".join(rng.choice(letters, size=int(rng.integers(1, 9)))))
    return list(dict.fromkeys(words))


@functools.lru_cache(maxsize=4)
def tensorflow_text_pieces(words: tuple[str, ...], vocab: tuple[str, ...]) -> list[list[str]]:
    """tensorflow-text's `WordpieceTokenizer` on `words`, with `vocab` (strings out)."""
    import tensorflow as tf
    import tensorflow_text as tf_text

    ids = tf.range(len(vocab), dtype=tf.int64)
    initializer = tf.lookup.KeyValueTensorInitializer(tf.constant(vocab), ids)
    table = tf.lookup.StaticVocabularyTable(initializer, num_oov_buckets=1)
    tokenizer = tf_text.WordpieceTokenizer(
        table,
        suffix_indicator=JOINER,
        max_bytes_per_word=1000,
        max_chars_per_token=None,
        token_out_type=tf.string,
        unknown_token=UNKNOWN,
    )
    pieces = tokenizer.tokenize(tf.constant(list(words))).to_list()
    return [[piece.decode("utf-8") for piece in row] for row in pieces]


@student_facing
def check_wordpiece(fn) -> None:
    """Checks a student's WordPiece tokenization of one word (greedy longest-match-first).

    Contract: `fn(word, vocab)`, `word` a str without spaces, `vocab` a set of str (pieces
    that continue a word start with '##'), returns the list of pieces (str): from the start
    of the word, the longest piece of `vocab` that matches there (with '##' after the first
    piece), until the word is used up; `['[UNK]']` when at some position no piece matches.
    Compared with tensorflow-text's `WordpieceTokenizer` on about 200 words (hand-written,
    generated from the vocabulary's pieces, random letters) with a vocabulary of its own.
    Mistakes named: shortest match first, one-character pieces never tried, '##' missing (lookup, output or both), '##' on the
    first piece, [UNK] for the unmatched part only (or the matched pieces kept, or the
    character skipped), an empty list for an unknown word.
    """
    vocab = tuple(sorted(CHECK_VOCAB))
    words = _check_words()
    expected = tensorflow_text_pieces(tuple(words), vocab)
    got = []
    for word in words:
        what = f"fn({word!r}, vocab)"
        pieces = run(what, fn, word, set(vocab))
        if isinstance(pieces, str) or not isinstance(pieces, (list, tuple)):
            fail(
                f"{what} returned {type(pieces).__name__} {pieces!r}; return a list of pieces "
                "(str), e.g. ['un', '##play', '##able'], or ['[UNK]']"
            )
        if not all(isinstance(piece, str) for piece in pieces):
            fail(f"{what} returned {list(pieces)!r}; return the pieces as str, not ids")
        got.append(list(pieces))
    wrong = [i for i, (g, e) in enumerate(zip(got, expected, strict=True)) if g != e]
    if not wrong:
        return None
    first = wrong[0]
    shown = (
        f"fn({words[first]!r}, vocab) returned {got[first]}; tensorflow-text's "
        f"WordpieceTokenizer gives {expected[first]} ({len(wrong)} of {len(words)} words differ)"
    )
    for mistake, message in WORDPIECE_MISTAKES.items():
        variant = [wordpiece_pieces(word, vocab, mistake) for word in words]
        if all(variant[i] == got[i] for i in wrong):
            fail(f"{shown}: {message}")
    fail(f"{shown}: greedy longest-match-first, '##' after the first piece, else ['[UNK]']")


# --------------------------------------------------------------------------------------------
# 5. Corpus BLEU


def _ngrams(words, n):
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def python_bleu(hypotheses, references, mistake=None, max_order=4):
    """Corpus BLEU (0-100) of whitespace-split sentences, one reference each, no smoothing;
    `mistake` switches in one of `BLEU_MISTAKES`."""
    if mistake == "sentence_average":
        scores = [python_bleu([h], [r]) for h, r in zip(hypotheses, references, strict=True)]
        return sum(scores) / len(scores)
    orders = range(1, (3 if mistake == "orders_1_to_3" else max_order) + 1)
    matches = dict.fromkeys(orders, 0)
    totals = dict.fromkeys(orders, 0)
    hyp_len = ref_len = 0
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        hyp, ref = hypothesis.split(), reference.split()
        hyp_len, ref_len = hyp_len + len(hyp), ref_len + len(ref)
        for n in orders:
            counts, ref_counts = _ngrams(hyp, n), _ngrams(ref, n)
            if mistake == "unclipped":
                matches[n] += sum(c for g, c in counts.items() if g in ref_counts)
            else:
                matches[n] += sum(min(c, ref_counts[g]) for g, c in counts.items())
            totals[n] += sum(ref_counts.values() if mistake == "recall" else counts.values())
    if hyp_len == 0 or any(matches[n] == 0 for n in orders):
        return 0.0
    precisions = [matches[n] / totals[n] for n in orders]
    if mistake == "arithmetic":
        mean = sum(precisions) / len(precisions)
    else:
        mean = math.exp(sum(math.log(p) for p in precisions) / len(precisions))
    if mistake == "no_brevity":
        brevity = 1.0
    elif mistake == "brevity_inverted":
        brevity = math.exp(1 - hyp_len / ref_len) if hyp_len < ref_len else 1.0
    elif mistake == "brevity_always":
        brevity = math.exp(1 - ref_len / hyp_len)
    else:
        brevity = math.exp(1 - ref_len / hyp_len) if hyp_len < ref_len else 1.0
    score = brevity * mean
    return score if mistake == "fraction" else 100 * score


BLEU_MISTAKES = {
    "unclipped": "unclipped n-gram counts: a hypothesis n-gram matches at most as many times "
    "as it occurs in the reference (clip with min(count, reference count))",
    "no_brevity": "no brevity penalty: multiply by exp(1 - r / c) when the corpus's hypotheses "
    "are shorter (c words) than its references (r words)",
    "brevity_inverted": "brevity penalty inverted: it is exp(1 - r / c), r the reference "
    "length, c the hypothesis length, when c < r",
    "brevity_always": "brevity penalty applied also to long hypotheses: it is 1 when c >= r, "
    "exp(1 - r / c) only when c < r",
    "sentence_average": "sentence BLEU averaged: corpus BLEU sums the clipped matches and the "
    "n-gram counts over all sentences first, then takes the precisions and the brevity "
    "penalty of the totals",
    "arithmetic": "arithmetic mean of the precisions: BLEU takes their geometric mean, "
    "exp(mean of log p_n)",
    "orders_1_to_3": "n-grams of orders 1 to 3 only: BLEU uses n = 1, 2, 3, 4 (range(1, 5))",
    "recall": "precisions divided by the reference's n-gram counts: divide the clipped "
    "matches by the HYPOTHESIS's n-gram counts",
    "fraction": "a fraction in [0, 1]: report BLEU on sacrebleu's 0-100 scale",
}

_BLEU_CASES = (  # (hypotheses, references): real English sentences and machine-like outputs
    (
        [
            "the government said on monday that it would raise taxes next year .",
            "she has lived in this city for ten years .",
            "the match was stopped because of the heavy rain .",
            "i do not know where he put the keys .",
            "prices rose by three per cent in march .",
            "the children played in the garden all afternoon .",
        ],
        [
            "the government announced on monday that it will raise taxes next year .",
            "she has been living in this city for ten years .",
            "the game was stopped because of heavy rain .",
            "i don't know where he put the keys .",
            "prices went up by three percent in march .",
            "the children played in the garden the whole afternoon .",
        ],
    ),
    (
        [  # short hypotheses: the brevity penalty matters
            "the minister resigned .",
            "we will meet at the station tomorrow .",
            "the museum is closed on mondays .",
            "he the the the said it .",
            "the train was late again this morning .",
        ],
        [
            "the minister resigned after the vote on wednesday evening .",
            "we will meet at the station tomorrow at nine o'clock .",
            "the museum is closed to visitors on mondays and tuesdays .",
            "he said that it was the best day of the year .",
            "the train was late again this morning because of the snow .",
        ],
    ),
    (
        [  # long hypotheses, repeated words: the clipping matters
            "the the cat is sitting on the the mat in the kitchen now .",
            "it is is is a very very good idea to leave early .",
            "they they they arrived late at the hotel last night .",
        ],
        [
            "the cat is on the mat .",
            "it is a good idea to leave early .",
            "they arrived late at the hotel .",
        ],
    ),
)


@student_facing
def check_corpus_bleu(fn) -> None:
    """Checks a student's corpus BLEU (Papineni et al., 2002), as sacrebleu computes it.

    Contract: `fn(hypotheses, references)`, two lists of str of the same length (one
    reference per hypothesis), returns corpus BLEU on a 0-100 scale: words split on spaces
    (`str.split()`, sacrebleu's `tokenize="none"`); for n = 1..4 the clipped n-gram matches
    and the hypothesis n-gram counts summed over the corpus, p_n = matches / counts;
    BLEU = 100 * BP * exp(mean of log p_n), BP = exp(1 - r / c) when the hypotheses' total
    length c is below the references' r, else 1; 0 when some p_n is 0 (no smoothing).
    Compared, within 0.1 BLEU, with `sacrebleu.BLEU(tokenize="none", smooth_method="none")`
    on three corpora of real sentences. Mistakes named: unclipped counts, no brevity penalty
    (or inverted, or always applied), sentence BLEU averaged, an arithmetic mean, orders 1-3
    only, precisions over the reference's counts, a 0-1 scale.
    """
    import sacrebleu

    bleu = sacrebleu.BLEU(tokenize="none", smooth_method="none")
    for number, (hypotheses, references) in enumerate(_BLEU_CASES, 1):
        what = f"fn(hypotheses, references) on corpus {number} ({len(hypotheses)} sentences)"
        value = as_array(run(what, fn, list(hypotheses), list(references)), what)
        if value.size != 1:
            fail(f"{what} returned shape {value.shape}; return one number, the corpus's BLEU")
        got = float(value.reshape(()))
        want = bleu.corpus_score(list(hypotheses), [list(references)]).score
        if abs(got - want) <= 0.1:
            continue
        for mistake, message in BLEU_MISTAKES.items():
            candidate = python_bleu(hypotheses, references, mistake)
            if abs(candidate - got) <= 0.01 * max(1.0, abs(got)) and abs(candidate - want) > 0.1:
                fail(f"{what} = {got:.2f}; sacrebleu gives {want:.2f}: {message}")
        fail(
            f"{what} = {got:.2f}; sacrebleu gives {want:.2f}: 100 * BP * geometric mean of the "
            "clipped n-gram precisions, n = 1..4, counts summed over the corpus"
        )
