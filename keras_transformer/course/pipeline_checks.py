"""Checkers of notebook 13, the pipeline by hand: WordPiece, the pre-LN encoder layer,
perplexity, greedy and beam search, corpus BLEU.

Each compares the student's code with the library the package uses for that step
(tensorflow-text's `WordpieceTokenizer`, `kt.layers.EncoderLayer(norm_first=True)`,
`kt.inference`'s searches, sacrebleu) on cases the notebook does not show, and names the
mistake by running a plain-Python version of the step with each classic mistake switched in.
"""

from __future__ import annotations

import functools
import math
from collections import Counter

import numpy as np

from keras_transformer import layers
from keras_transformer.course.checking import (
    as_array,
    close,
    close_on,
    copy_weights,
    fail,
    make_layer,
    max_diff,
    reference_weights,
    run,
    shaped_output,
    student_facing,
)
from keras_transformer.course.references import (
    np_attention_mask,
    np_ffn,
    np_layer_norm,
    np_mha,
    np_token_losses,
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
# 2. The pre-LN encoder layer

PRE_LN_RIGHT = (
    "the pre-LN layer is h = x + MultiHead(LN1(x)) (padded keys masked), out = h + FFN(LN2(h)): "
    "each sub-layer reads the NORMALIZED input, and the residual adds the input itself"
)


def pre_ln_candidates(x, arrays, heads, padding):
    """(output, mistake) pairs: the pre-LN encoder layer in NumPy with one known mistake."""
    mha, (g1, b1), ffn, (g2, b2) = arrays[:8], arrays[8:10], arrays[10:14], arrays[14:]
    keys = np_attention_mask(x.shape[1], padding)

    def attention(t, mask=keys):
        return np_mha(mha, heads, t, t, mask=mask)

    def feed(t):
        return np_ffn(t, *ffn)

    def ln1(t):
        return np_layer_norm(t, g1, b1)

    def ln2(t):
        return np_layer_norm(t, g2, b2)

    def post(h):
        return ln2(h + feed(h))

    def pre(h):
        return h + feed(ln2(h))

    joins = {  # how one sub-layer F with norm N joins its input t: (function, words)
        "post": (lambda t, f, n: n(t + f(t)), "post-LN, LayerNorm(x + F(x))"),
        "after": (
            lambda t, f, n: n(t) + f(n(t)),
            "the residual taken after the norm, LayerNorm(x) + F(LayerNorm(x))",
        ),
        "output": (lambda t, f, n: t + n(f(t)), "the norm on the output, x + LayerNorm(F(x))"),
        "twice": (
            lambda t, f, n: n(t + f(n(t))),
            "normalized before and after, LayerNorm(x + F(LayerNorm(x)))",
        ),
        "no_residual": (lambda t, f, n: f(n(t)), "no residual, F(LayerNorm(x))"),
        "no_norm": (lambda t, f, n: t + f(t), "no LayerNorm, x + F(x)"),
    }

    def wired(first, second):
        right = (lambda t, f, n: t + f(n(t)), "")
        a, b = joins.get(first, right)[0], joins.get(second, right)[0]
        return b(a(x, attention, ln1), feed, ln2)

    for how, (_, words) in joins.items():
        both = words.replace("F(", "Sublayer(")
        yield wired(how, how), f"both sub-layers: {both}"
    h = x + attention(ln1(x))
    yield (
        ln2(pre(h)),
        "the final LayerNorm is applied inside the layer (LN2 on the output too: "
        "LN2(h + FFN(LN2(h)))); a pre-LN layer returns h + FFN(LN2(h)), and the encoder stack "
        "applies ONE final LayerNorm after its last layer",
    )
    for how, (_, words) in joins.items():
        yield (
            wired(how, None),
            f"the self-attention sub-layer: {words.replace('F(', 'MultiHead(')}",
        )
        yield wired(None, how), f"the feed-forward sub-layer: {words.replace('F(', 'FFN(')}"
    h = x + attention(ln1(x))
    yield (
        h + feed(ln2(x)),
        "the feed-forward sub-layer reads LN2(x), the layer input; it reads LN2(h), "
        "h = x + MultiHead(LN1(x)) the self-attention sub-layer's output",
    )
    yield (
        x + feed(ln2(h)),
        "the feed-forward residual adds the layer input x; it adds h = x + MultiHead(LN1(x))",
    )
    yield (
        h + feed(ln1(h)),
        "the feed-forward sub-layer normalizes with the first LayerNorm; each sub-layer has "
        "its own (LN2, created after the feed-forward network)",
    )
    free = x + attention(ln1(x), mask=None)
    yield pre(free), "padding_mask ignored: padded keys must get weight 0 in self-attention"


@student_facing
def check_pre_ln_encoder_layer(cls, d_model: int = 16, num_heads: int = 4, dff: int = 32) -> None:
    """Checks a student's pre-LN encoder layer (Xiong et al., 2020; the paper's section 3.1
    with the LayerNorm moved before each sub-layer).

    Contract: `cls(d_model=..., num_heads=..., dff=...)` is a `keras.layers.Layer`;
    `layer(x, padding_mask=None)`, `x` `(batch, seq_len, d_model)`, boolean `padding_mask`
    `(batch, seq_len)` (`True` = real token), computes, without dropout,
    `h = x + MultiHead(LN1(x))` with padded keys masked, then `h + FFN(LN2(h))`, and no final
    LayerNorm (the encoder stack applies one after its last layer). Trainable weights, in
    creation order, as in `kt.layers.EncoderLayer(norm_first=True)`: self-attention (4
    kernels and 4 biases), LN1 (gamma, beta), FFN (`W1`, `b1`, `W2`, `b2`), LN2.
    Compared with `kt.layers.EncoderLayer(norm_first=True)` holding the same weights, at
    the real positions. Mistakes named: post-LN (in one or both sub-layers), the residual
    taken after the norm, the norm on the sub-layer's output, normalized before and after,
    no residual, no norm, the feed-forward sub-layer reading or adding the wrong tensor, one
    norm used twice, the final LayerNorm inside the layer, the padding mask ignored.
    """
    sec = "(pre-LN, Xiong et al. 2020)"
    rng = np.random.default_rng(21)
    layer = make_layer(cls, d_model=d_model, num_heads=num_heads, dff=dff)
    x = (1.5 + 2.0 * rng.standard_normal((2, 6, d_model))).astype("float32")
    padding = np.array([[True] * 6, [True] * 4 + [False] * 2])
    run("layer(x)", layer, x)
    reference = layers.EncoderLayer(num_heads=num_heads, dff=dff, dropout=0.0, norm_first=True)
    arrays = reference_weights(reference, rng, x)
    layout = (
        "self-attention (query, key, value, output: kernel + bias each), LN1 (gamma, beta), "
        "feed-forward (W1, b1, W2, b2), LN2 (gamma, beta)"
    )
    copy_weights(layer, arrays, "the pre-LN encoder layer", layout)
    what = "layer(x, padding_mask=mask)"
    out = shaped_output(what, run(what, layer, x, padding_mask=padding), x.shape, sec)
    expected = as_array(reference(x, padding_mask=padding), "reference")
    if not np.isfinite(out[padding]).all():
        fail(
            f"{what} is NaN at real positions: fill masked scores with a large finite "
            "negative number (-1e9), not -inf"
        )
    if close_on(out, expected, padding):
        junk = x.copy()
        junk[1, 4:] = rng.standard_normal((2, d_model)) * 5
        again = as_array(run(what, layer, junk, padding_mask=padding), what)
        if not close(again[1, :4], out[1, :4], loose=True):
            fail(f"padded positions change the real positions' outputs: mask padded keys {sec}")
        return None
    for candidate, mistake in pre_ln_candidates(x.astype("float64"), arrays, num_heads, padding):
        if close_on(out, candidate, padding):
            fail(f"pre-LN encoder layer: {mistake}; {PRE_LN_RIGHT} {sec}")
    fail(
        f"pre-LN encoder layer differs from kt.layers.EncoderLayer(norm_first=True) with the "
        f"same weights ({max_diff(out[padding], expected[padding])} at the real positions): "
        f"{PRE_LN_RIGHT} {sec}"
    )


# --------------------------------------------------------------------------------------------
# 3. Perplexity


def _perplexity_candidates(labels, logits):
    token = np_token_losses(labels, logits)  # (batch, seq_len), nats
    real = labels != 0
    mean = token[real].mean()
    per_sentence = np.array([token[i][real[i]].mean() for i in range(len(labels))])
    probs = np.clip(logits / logits.sum(-1, keepdims=True), 1e-7, 1 - 1e-7)
    as_probs = -np.log(np.take_along_axis(probs, labels[..., None], -1)[..., 0])[real].mean()
    yield (
        np.exp(token.mean()),
        (
            "the padding is counted: average the cross-entropy over the tokens whose label is not 0 "
            "only, then exponentiate"
        ),
    )
    yield (
        np.exp(token[real].sum() / labels.size),
        ("divided by all positions: divide the summed cross-entropy by the number of real tokens"),
    )
    yield (
        np.exp(per_sentence).mean(),
        (
            "a mean of per-sentence perplexities: average the cross-entropy over every real token of "
            "the batch, then exponentiate once"
        ),
    )
    yield (
        np.exp(per_sentence.mean()),
        (
            "the cross-entropy averaged per sentence, then over sentences: average over every real "
            "token of the batch (a long sentence counts more)"
        ),
    )
    yield (
        np.exp(token[real]).mean(),
        (
            "exp of each token's cross-entropy, then the mean: exponentiate the MEAN cross-entropy "
            "(the geometric mean of 1/p, not the arithmetic one)"
        ),
    )
    yield (
        2.0**mean,
        (
            "2 ** (cross-entropy in nats): the loss uses the natural log, so perplexity is exp(loss); "
            "2 ** H only with H in bits"
        ),
    )
    yield (
        np.exp(mean / np.log(2.0)),
        (
            "the cross-entropy taken in bits (log base 2) and then exp: use one base throughout, "
            "exp(mean natural-log cross-entropy)"
        ),
    )
    yield mean, "the mean cross-entropy, not exponentiated: perplexity = exp(mean cross-entropy)"
    smoothed = np_token_losses(labels, logits, 0.1)[real].mean()
    yield (
        np.exp(smoothed),
        (
            "the label-smoothed loss (eps 0.1) exponentiated: perplexity uses the plain "
            "cross-entropy, -log p(label), without label smoothing"
        ),
    )
    yield np.exp(as_probs), "the logits read as probabilities: apply the softmax first"
    yield np.exp(token[real].sum()), "exp of the SUM of the cross-entropy; exp of its mean"


@student_facing
def check_perplexity(fn) -> None:
    """Checks a student's perplexity from the masked loss.

    Contract: `fn(labels, logits)`, int `labels` `(batch, seq_len)` (0 = padding), float32
    `logits` `(batch, seq_len, vocab_size)`, returns the scalar
    `exp(mean over the tokens whose label is not 0 of -log softmax(logits)[label])`
    (natural logarithm, as `MaskedSparseCategoricalCrossentropy` without label smoothing).
    Mistakes named: the padding counted, divided by all positions, a mean of per-sentence
    perplexities or of per-sentence means, exp per token then mean, 2 ** or bits, no exp,
    the label-smoothed loss,
    logits read as probabilities, a sum, padded positions' logits changing the value.
    """
    rng = np.random.default_rng(31)
    labels = np.array(
        [[5, 3, 7, 2, 9, 4, 1, 0], [4, 1, 0, 0, 0, 0, 0, 0], [6, 6, 2, 8, 0, 0, 0, 0]], "int32"
    )
    logits = (1.5 * rng.standard_normal((3, 8, 11))).astype("float32")
    what = "fn(labels, logits)"

    def call(z):
        value = as_array(run(what, fn, labels, z), what)
        if value.size != 1:
            fail(f"{what} returned shape {value.shape}; expected a scalar, the batch's perplexity")
        return float(value.reshape(()))

    got = call(logits)
    token = np_token_losses(labels, logits.astype("float64"))
    want = float(np.exp(token[labels != 0].mean()))
    if not np.isclose(got, want, rtol=1e-3):
        for candidate, mistake in _perplexity_candidates(labels, logits.astype("float64")):
            if np.isclose(got, candidate, rtol=1e-3):
                fail(f"{what} = {got:.4f}, expected {want:.4f}: {mistake}")
        fail(f"{what} = {got:.4f}; exp(mean cross-entropy over the real tokens) is {want:.4f}")
    junk = logits.copy()
    junk[labels == 0] = rng.standard_normal(junk[labels == 0].shape) * 10
    if not np.isclose(call(junk), got, rtol=1e-4):
        fail(f"the logits at padded positions change {what}; they must not count")


# --------------------------------------------------------------------------------------------
# 4. Greedy and beam search

SEARCH_SOURCE_VOCAB, SEARCH_TARGET_VOCAB, SEARCH_START, SEARCH_END = 12, 14, 2, 3
SEARCH_MAX_LENGTH = 8


@functools.lru_cache(maxsize=1)
def search_model():
    """The checker's fixed-weight model: `build_transformer` (1 layer, d_model 16) with
    seeded random weights, [END]'s output bias raised so that some sentences end early."""
    from keras_transformer import models

    model = models.build_transformer(
        SEARCH_SOURCE_VOCAB,
        SEARCH_TARGET_VOCAB,
        num_layers=1,
        d_model=16,
        num_heads=2,
        dff=32,
        dropout=0.0,
        max_length=12,
    )
    rng = np.random.default_rng(0)
    for variable in model.trainable_weights:
        path = variable.path
        scale = 0.5 if path.endswith(("gamma", "beta", "bias")) else 1.0
        scale = 0.5 if "logits" in path else scale
        value = path.endswith("gamma") + scale * rng.standard_normal(tuple(variable.shape))
        if path.endswith("logits/bias"):
            value[SEARCH_END] += 3.0
        variable.assign(value.astype("float32"))
    return model


class TracedModel:
    """`model({"source": ids, "target": ids}, training=False)` traced once by `tf.function`
    (any batch and lengths): a search calls the model once a token, which eagerly costs
    about 30 times as much on a small model. Called as the Keras model is; `.model` is it."""

    def __init__(self, model):
        import tensorflow as tf

        self.model = model
        spec = tf.TensorSpec([None, None], tf.int32)

        @tf.function(input_signature=[spec, spec])
        def logits(source, target):
            return model({"source": source, "target": target}, training=False)

        self._logits = logits

    def __getattr__(self, name):  # anything else (predict, layers, ...): the Keras model's
        if name == "model":
            raise AttributeError(name)
        return getattr(self.model, name)

    def __call__(self, inputs, training=False):
        import tensorflow as tf

        source = tf.convert_to_tensor(np.asarray(inputs["source"]), tf.int32)
        target = tf.convert_to_tensor(np.asarray(inputs["target"]), tf.int32)
        return self._logits(source, target)


@functools.lru_cache(maxsize=1)
def traced_search_model() -> TracedModel:
    """`search_model()` traced: what the search checkers pass to the student's function."""
    return TracedModel(search_model())


def search_sources() -> np.ndarray:
    """Source ids `(6, 6)` the checkers decode: [START], four words, [END]."""
    rng = np.random.default_rng(0)
    words = rng.integers(4, SEARCH_SOURCE_VOCAB, (12, 4))[[0, 2, 3, 5, 8, 9]]
    framed = [np.full((6, 1), SEARCH_START), words, np.full((6, 1), SEARCH_END)]
    return np.concatenate(framed, 1).astype("int32")


def _trimmed(row) -> list[int]:
    out = []
    for token in np.asarray(row).tolist():
        if token == 0:
            break
        out.append(int(token))
        if token == SEARCH_END:
            break
    return out


def _library_greedy(model, sources, max_length):
    from keras_transformer.inference import greedy_decode

    ids = greedy_decode(
        model, sources, start_id=SEARCH_START, end_id=SEARCH_END, max_length=max_length
    )
    return [_trimmed(row) for row in ids]


def _library_beams(model, sources, max_length, beam_size, alphas):
    """kt.inference's beam search, one search ranked under each alpha: {alpha: [ids]}."""
    import tensorflow as tf

    from keras_transformer.inference import IncrementalDecoder, beam_search_ranked

    decoder = IncrementalDecoder(model, max_length + 1)
    ids = beam_search_ranked(
        decoder,
        tf.constant(sources),
        start_id=SEARCH_START,
        end_id=SEARCH_END,
        beam_size=beam_size,
        alphas=tf.constant(alphas, tf.float32),
    ).numpy()
    n = len(sources)
    return {a: [_trimmed(row) for row in ids[i * n : (i + 1) * n]] for i, a in enumerate(alphas)}


class _Scorer:
    """Log-probabilities of the next target token after a prefix, from full-prefix model calls
    (memoized); `pad` "never" (the package: [PAD] at -inf before the log-softmax), "after"
    (removed after it) or "allowed"."""

    def __init__(self, model, source):
        self.model, self.source, self.cache = model, np.asarray(source)[None], {}

    def logits(self, prefix):
        if prefix not in self.cache:
            target = np.array([prefix], "int32")
            out = self.model({"source": self.source, "target": target}, training=False)
            self.cache[prefix] = np.asarray(out, "float64")[0, -1]
        return self.cache[prefix]

    def log_probs(self, prefix, pad="never"):
        z = self.logits(prefix).copy()
        if pad == "never":
            z[0] = -np.inf
        z = z - z.max()
        out = z - np.log(np.exp(z).sum())
        if pad == "after":
            out[0] = -np.inf
        return out


def _penalty(length, alpha, formula="gnmt"):
    if formula == "gnmt":
        return ((5.0 + length) / 6.0) ** alpha
    if formula == "plain":
        return float(length) ** alpha
    if formula == "length":
        return float(length)
    return 1.0


def python_greedy(scorer, max_length, mistake=None):
    """Greedy search by hand (the package's, or with one mistake)."""
    prefix = (SEARCH_START,)
    steps = max_length + {"one_less": -1, "one_more": 1}.get(mistake, 0)
    out = []
    for _ in range(steps):
        if mistake == "first_position":
            log_p = scorer.log_probs(prefix[:1])
        else:
            log_p = scorer.log_probs(prefix, "allowed" if mistake == "pad" else "never")
        token = int(np.argmax(log_p))
        prefix += (token,)
        if token == SEARCH_END and mistake != "no_stop":
            if mistake != "end_dropped":
                out.append(token)
            break
        out.append(token)
    return [SEARCH_START, *out] if mistake == "with_start" else out


GREEDY_MISTAKES = {
    "no_stop": "it does not stop at [END]: stop the sentence once [END] is chosen (and keep "
    "that [END] as its last token)",
    "end_dropped": "[END] is left out of the output: return the tokens up to and including [END]",
    "with_start": "[START] is in the output: return only the generated tokens (the first one "
    "after [START])",
    "pad": "[PAD] (id 0) can be chosen: set its logit to -inf before taking the arg-max",
    "first_position": "the logits of the first position are read at every step: the next "
    "token is predicted at the LAST position of the prefix, logits[:, -1]",
    "one_less": "one token too few: generate up to max_length tokens, [END] included",
    "one_more": "one token too many: generate at most max_length tokens, [END] included",
}


def python_beam(scorer, max_length, beam_size, alpha, mistake=None):
    """Beam search by hand, as `kt.inference.beam_search` does it, or with one mistake."""
    pad = {"pad_after": "after", "pad": "allowed"}.get(mistake, "never")
    k = 1 if mistake == "one_beam" else beam_size
    beams = [((SEARCH_START,), 0.0, False)]  # (prefix, score, finished)
    formula = {"no_penalty": "none", "plain_penalty": "plain", "length_division": "length"}

    def ranked(beam):
        prefix, score, _ = beam
        if mistake == "penalty_while_pruning":
            return score / _penalty(len(prefix) - 1, alpha)
        return score

    finished_aside = []
    for _ in range(max_length):
        candidates = []
        for prefix, score, done in beams:
            if done and mistake != "no_stop":
                candidates.append((prefix, score, True))
                continue
            log_p = scorer.log_probs(prefix, pad)
            for token in range(len(log_p)):
                if log_p[token] == -np.inf:
                    continue
                if mistake == "last_only":
                    new = float(log_p[token])
                elif mistake == "probabilities":
                    new = score + float(np.exp(log_p[token]))
                else:
                    new = score + float(log_p[token])
                candidates.append((prefix + (token,), new, token == SEARCH_END))
        candidates.sort(key=ranked, reverse=True)
        beams = candidates[:k]
        if mistake == "finished_aside":
            finished_aside += [b for b in beams if b[2]]
            beams = [b for b in candidates if not b[2]][:k]
        if all(done for _, _, done in beams) and mistake != "no_stop":
            break
    pool = beams + finished_aside
    form = formula.get(mistake, "gnmt")
    if mistake == "penalty_without_end":
        best = max(pool, key=lambda b: b[1] / _penalty(len(b[0]) - 1 - b[2], alpha))
    elif mistake == "penalty_with_start":
        best = max(pool, key=lambda b: b[1] / _penalty(len(b[0]), alpha))
    else:
        best = max(pool, key=lambda b: b[1] / _penalty(len(b[0]) - 1, alpha, form))
    return list(best[0][1:])


BEAM_MISTAKES = {
    "one_beam": "only one beam is kept (this is greedy search): keep the beam_size best "
    "prefixes at every step",
    "no_stop": "a beam does not stop at [END]: a beam that produced [END] is finished; it "
    "keeps its score and its place among the candidates, and is not extended",
    "no_penalty": "no length penalty: rank the finished beams by score / ((5 + length) / 6) "
    "** alpha (GNMT, Wu et al. 2016), length = generated tokens with [END]",
    "plain_penalty": "length penalty length ** alpha: the package's (GNMT) is ((5 + length) / "
    "6) ** alpha",
    "length_division": "the score divided by the length: the penalty is ((5 + length) / 6) ** "
    "alpha",
    "penalty_without_end": "the length counts the tokens without [END]: count the generated "
    "tokens, [END] included",
    "penalty_with_start": "the length counts [START]: count the generated tokens only, [END] "
    "included",
    "penalty_while_pruning": "the length penalty applied while pruning: the beams are kept by "
    "their summed log-probability; the penalty only ranks the final beams",
    "last_only": "a beam scored by its last token's log-probability: sum the "
    "log-probabilities of all its tokens",
    "probabilities": "probabilities summed: sum the LOG-probabilities (the log of the product "
    "of the probabilities)",
    "finished_aside": "finished beams set aside while beam_size live beams go on: a finished "
    "beam keeps its place among the beam_size best, so the search stops when all are finished",
    "pad_after": "[PAD] counted in the log-softmax (removed after it, or allowed): set its "
    "logit to -inf BEFORE the log-softmax, so that the other tokens' probabilities sum to 1",
    "pad": "[PAD] (id 0) can be chosen: set its logit to -inf before the log-softmax",
}


def _search_output(what, value):
    try:
        tokens = [int(t) for t in np.asarray(value).reshape(-1).tolist()]
    except (TypeError, ValueError):
        fail(f"{what} returned {type(value).__name__} {value!r}; return a list of token ids (int)")
    while tokens and tokens[-1] == 0:  # padding after the output (as kt.inference returns it)
        tokens.pop()
    return tokens


def _search_verdict(calls, model, search, mistakes, right):
    """Fails on the first call the student got wrong, naming the mistake whose Python search
    gives the student's tokens on every call (else on every call the student got wrong).

    `calls`: `(what, source index, options, got, expected)`; `search(scorer, options,
    mistake)` runs the Python search."""
    wrong = [call for call in calls if call[3] != call[4]]
    if not wrong:
        return None
    sources, scorers = search_sources(), {}

    def scorer(index):
        if index not in scorers:
            scorers[index] = _Scorer(model, sources[index])
        return scorers[index]

    what, index, _, got, expected = wrong[0]
    shown = (
        f"{what} on source {sources[index].tolist()} returned {got}; kt.inference gives "
        f"{expected} ({len(wrong)} of {len(calls)} calls differ)"
    )
    for which in (calls, wrong):  # the mistake that explains every call first
        for mistake, message in mistakes.items():
            if all(search(scorer(i), options, mistake) == g for _, i, options, g, _ in which):
                fail(f"{shown}: {message}")
    fail(f"{shown}: {right}")


@student_facing
def check_greedy_search(fn) -> None:
    """Checks a student's greedy search over an encoder-decoder model.

    Contract: `fn(model, source, start_id, end_id, max_length)`, `model` a
    `kt.models.build_transformer` model (called as `model({"source": ids, "target": ids},
    training=False)`, logits `(batch, tgt_len, vocab)` out; the checker passes it traced,
    as a `TracedModel`), `source` int32 `(1, src_len)` framed ids, returns the list of
    generated token ids (int): from `[start_id]`, append the arg-max of the logits at the
    last position, [PAD] (id 0) excluded, until `end_id` (included) or `max_length` tokens.
    Compared with `kt.inference.greedy_decode` on a fixed-weight model and six sources.
    Mistakes named: not stopping at [END], [END] left out, [START] in the output, [PAD]
    chosen, the first position's logits read, one token too few or too many.
    """
    model, sources = traced_search_model(), search_sources()
    want = _library_greedy(model.model, sources, SEARCH_MAX_LENGTH)
    what = f"fn(model, source, start_id=2, end_id=3, max_length={SEARCH_MAX_LENGTH})"
    calls = []
    for index, source in enumerate(sources):
        value = run(what, fn, model, source[None], SEARCH_START, SEARCH_END, SEARCH_MAX_LENGTH)
        calls.append((what, index, None, _search_output(what, value), want[index]))
    _search_verdict(
        calls,
        model,
        lambda scorer, _, mistake: python_greedy(scorer, SEARCH_MAX_LENGTH, mistake),
        GREEDY_MISTAKES,
        "at every step append the arg-max of the last position's logits ([PAD] excluded); "
        "stop after [END] or max_length tokens",
    )


BEAM_ALPHAS = (0.0, 0.6, 2.0)


@student_facing
def check_beam_search(fn, beam_size: int = 3) -> None:
    """Checks a student's beam search with the GNMT length penalty.

    Contract: `fn(model, source, start_id, end_id, max_length, beam_size, alpha)` (model and
    source as in `check_greedy_search`) returns the best beam's generated token ids (int):
    start from the one beam `[start_id]` with score 0; at every step extend every unfinished
    beam by every token but [PAD] (logit -inf before the log-softmax), its score the SUM of
    the log-probabilities; a finished beam (its last token `end_id`) stays a candidate with
    its score; keep the `beam_size` best candidates; stop when every kept beam is finished or
    after `max_length` tokens; return the beam with the highest
    `score / ((5 + length) / 6) ** alpha`, `length` its generated tokens, [END] included.
    Compared with `kt.inference.beam_search` on a fixed-weight model, six sources and alpha
    0, 0.6 and 2.
    Mistakes named: one beam kept, not stopping at [END], no length penalty or another
    formula, [END] not counted or [START] counted, the penalty applied while pruning, the last log-probability
    or summed probabilities as the score, finished beams set aside, [PAD] allowed or removed
    after the log-softmax.
    """
    model, sources = traced_search_model(), search_sources()
    want = _library_beams(model.model, sources, SEARCH_MAX_LENGTH, beam_size, BEAM_ALPHAS)
    calls = []
    for alpha in BEAM_ALPHAS:
        what = (
            f"fn(model, source, start_id=2, end_id=3, max_length={SEARCH_MAX_LENGTH}, "
            f"beam_size={beam_size}, alpha={alpha:g})"
        )
        for index, source in enumerate(sources):
            args = (SEARCH_START, SEARCH_END, SEARCH_MAX_LENGTH, beam_size, alpha)
            value = run(what, fn, model, source[None], *args)
            calls.append((what, index, alpha, _search_output(what, value), want[alpha][index]))
    _search_verdict(
        calls,
        model,
        lambda scorer, alpha, mistake: python_beam(
            scorer, SEARCH_MAX_LENGTH, beam_size, alpha, mistake
        ),
        BEAM_MISTAKES,
        "keep the beam_size best prefixes by summed log-probability, finished ones included; "
        "rank the final beams by score / ((5 + length) / 6) ** alpha",
    )


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
