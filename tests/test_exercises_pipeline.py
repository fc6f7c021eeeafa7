"""The checkers of notebook 13 (the pipeline by hand): each reference solution passes, each
classic mistake, written here as a student would write it, fails with the message naming it,
and the libraries the checkers compare with agree with the checkers' own Python versions
(tensorflow-text's WordPiece, sacrebleu's BLEU, `kt.inference`'s searches)."""

import keras
import numpy as np
import pytest

import keras_transformer as kt
from keras_transformer import exercises
from keras_transformer.course import search_checks, text_checks

pytestmark = pytest.mark.requires_tensorflow("tensorflow-text, kt.inference's searches")

GENERIC = ("greedy longest-match-first, '##' after", "differs from", "exp(mean cross-entropy")


def fails_naming(check, fn, *needles):
    with pytest.raises(AssertionError) as info:
        check(fn)
    message = str(info.value)
    assert "\n" not in message, message
    assert "Traceback" not in message and "function_node" not in message, message
    for needle in needles:
        assert needle in message, message
    return message


# 1. WordPiece


def wordpiece(word, vocab, bug=None):
    pieces, start = [], 0
    while start < len(word):
        ends = range(start + 1, len(word) + 1) if bug == "shortest" else range(len(word), start, -1)
        if bug == "no_single":
            ends = range(len(word), start + 1, -1)
        piece = None
        for end in ends:
            text = word[start:end]
            marked = text if (start == 0 or bug == "no_joiner") else "##" + text
            if bug == "joiner_first":
                marked = "##" + text
            if marked in vocab:
                piece = marked
                break
        if piece is None:
            if bug == "unk_part":
                pieces.append("[UNK]")
                start += 1
                continue
            if bug == "empty":
                return []
            return [*pieces, "[UNK]"] if bug == "unk_rest" else ["[UNK]"]
        pieces.append(piece)
        start = end
    return pieces


def test_wordpiece_reference_passes():
    assert exercises.check_wordpiece(wordpiece) is None


@pytest.mark.parametrize(
    "bug, needle",
    [
        ("shortest", "shortest match first"),
        ("no_single", "one-character pieces are never tried"),
        ("no_joiner", "without '##'"),
        ("joiner_first", "the first piece is looked up with '##'"),
        ("unk_part", "[UNK] for the unmatched character only"),
        ("unk_rest", "the pieces found before the unmatched position are kept"),
        ("empty", "gives []"),
    ],
)
def test_wordpiece_mistakes_are_named(bug, needle):
    fails_naming(exercises.check_wordpiece, lambda w, v: wordpiece(w, v, bug), needle)


def test_wordpiece_wrong_types_are_named():
    fails_naming(exercises.check_wordpiece, lambda w, v: " ".join(w), "return a list of pieces")
    fails_naming(exercises.check_wordpiece, lambda w, v: [1, 2], "not ids")


def test_python_wordpiece_is_tensorflow_texts_on_a_learnt_vocabulary():
    """The checker's Python WordPiece and tensorflow-text agree on the words of a corpus and
    on generated ones, with a vocabulary the package's learner made (and the checker's)."""
    texts = [" ".join(s) for s in kt.data.load_task("numbers", num_train=300, seed=1).train]
    tokenizer = kt.data.WordPieceTokenizer.learn(texts, vocab_size=120)
    vocab = tuple(tokenizer.vocabulary)
    words = sorted({w for text in texts for w in text.split()})
    rng = np.random.default_rng(0)
    letters = sorted({c for w in words for c in w}) + ["q", "é"]
    words += ["".join(rng.choice(letters, size=int(rng.integers(1, 12)))) for _ in range(300)]
    expected = text_checks.tensorflow_text_pieces(tuple(words), vocab)
    assert [text_checks.wordpiece_pieces(w, set(vocab)) for w in words] == expected
    assert any(row == ["[UNK]"] for row in expected) and any(len(row) > 2 for row in expected)
    own = tuple(sorted(text_checks.CHECK_VOCAB))
    own_words = text_checks._check_words()
    assert [
        text_checks.wordpiece_pieces(w, set(own)) for w in own_words
    ] == text_checks.tensorflow_text_pieces(tuple(own_words), own)


# 2. The pre-LN encoder layer


class PreLN(keras.layers.Layer):
    bug = None

    def __init__(self, d_model, num_heads, dff, **kwargs):
        super().__init__(**kwargs)
        self.attention = kt.layers.MultiHeadAttention(num_heads, key_dim=d_model // num_heads)
        self.norm1 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.inner = keras.layers.Dense(dff, activation="relu")
        self.outer = keras.layers.Dense(d_model)
        self.norm2 = keras.layers.LayerNormalization(epsilon=1e-6)

    def call(self, x, padding_mask=None):
        mask = None
        if padding_mask is not None and self.bug != "no_mask":
            mask = keras.ops.expand_dims(keras.ops.cast(padding_mask, "bool"), 1)

        def mha(t):
            return self.attention(t, t, attention_mask=mask)

        def ffn(t):
            return self.outer(self.inner(t))

        if self.bug == "post":
            h = self.norm1(x + mha(x))
            return self.norm2(h + ffn(h))
        if self.bug == "residual_after_norm":
            n = self.norm1(x)
            h = n + mha(n)
            m = self.norm2(h)
            return m + ffn(m)
        if self.bug == "norm_on_output":
            h = x + self.norm1(mha(x))
            return h + self.norm2(ffn(h))
        if self.bug == "final_norm":
            h = x + mha(self.norm1(x))
            return self.norm2(h + ffn(self.norm2(h)))
        if self.bug == "ffn_reads_input":
            h = x + mha(self.norm1(x))
            return h + ffn(self.norm2(x))
        h = x + mha(self.norm1(x))
        return h + ffn(self.norm2(h))


def pre_ln(bug):
    return type(f"PreLN_{bug}", (PreLN,), {"bug": bug})


def test_pre_ln_reference_passes():
    assert exercises.check_pre_ln_encoder_layer(PreLN) is None


@pytest.mark.parametrize(
    "bug, needle",
    [
        ("post", "both sub-layers: post-LN"),
        ("residual_after_norm", "residual taken after the norm"),
        ("norm_on_output", "the norm on the output"),
        ("final_norm", "final LayerNorm is applied inside the layer"),
        ("ffn_reads_input", "reads LN2(x)"),
        ("no_mask", "padding_mask ignored"),
    ],
)
def test_pre_ln_mistakes_are_named(bug, needle):
    fails_naming(exercises.check_pre_ln_encoder_layer, pre_ln(bug), needle)


# 3. Perplexity


def perplexity(labels, logits, bug=None):
    log_p = keras.ops.convert_to_numpy(keras.ops.log_softmax(logits, axis=-1)).astype("float64")
    nll = -np.take_along_axis(log_p, np.asarray(labels)[..., None], -1)[..., 0]
    real = np.asarray(labels) != 0
    if bug == "no_mask":
        return np.exp(nll.mean())
    if bug == "per_sequence":
        return np.mean([np.exp(nll[i][real[i]].mean()) for i in range(len(nll))])
    if bug == "exp_per_token":
        return np.exp(nll[real]).mean()
    if bug == "base_2":
        return 2 ** nll[real].mean()
    if bug == "bits":
        return np.exp((nll[real] / np.log(2)).mean())
    if bug == "no_exp":
        return nll[real].mean()
    if bug == "smoothed":
        smooth = 0.9 * nll - 0.1 * log_p.mean(-1)
        return np.exp(smooth[real].mean())
    return np.exp(nll[real].mean())


def test_perplexity_reference_passes():
    assert exercises.check_perplexity(perplexity) is None


def test_perplexity_is_exp_of_the_package_loss():
    labels = np.array([[4, 2, 7, 0], [3, 0, 0, 0]], "int32")
    logits = np.random.default_rng(0).standard_normal((2, 4, 9)).astype("float32")
    loss = kt.training.MaskedSparseCategoricalCrossentropy()(labels, logits)
    assert np.isclose(perplexity(labels, logits), np.exp(float(loss)), rtol=1e-5)


@pytest.mark.parametrize(
    "bug, needle",
    [
        ("no_mask", "the padding is counted"),
        ("per_sequence", "a mean of per-sentence perplexities"),
        ("exp_per_token", "exp of each token's cross-entropy, then the mean"),
        ("base_2", "2 ** (cross-entropy in nats)"),
        ("bits", "in bits (log base 2)"),
        ("no_exp", "not exponentiated"),
        ("smoothed", "label-smoothed loss"),
    ],
)
def test_perplexity_mistakes_are_named(bug, needle):
    fails_naming(exercises.check_perplexity, lambda y, z: perplexity(y, z, bug), needle)


# 4. Greedy and beam search


def next_log_probs(model, source, prefix, pad="never"):
    logits = model({"source": source, "target": np.array([prefix], "int32")}, training=False)
    logits = np.asarray(logits, "float64")[0, -1]
    if pad == "never":
        logits[0] = -np.inf
    logits = logits - logits.max()
    out = logits - np.log(np.exp(logits).sum())
    if pad == "after":
        out[0] = -np.inf
    return out


def greedy(model, source, start_id, end_id, max_length, bug=None):
    prefix = [start_id]
    for _ in range(max_length):
        token = int(np.argmax(next_log_probs(model, source, prefix)))
        prefix.append(token)
        if token == end_id and bug != "no_stop":
            break
    if bug == "end_dropped" and prefix[-1] == end_id:
        return prefix[1:-1]
    return prefix if bug == "with_start" else prefix[1:]


def beam(model, source, start_id, end_id, max_length, beam_size, alpha, bug=None):
    if bug == "one_beam":
        beam_size = 1
    pad = "after" if bug == "pad_after" else "never"
    beams = [([start_id], 0.0)]
    for _ in range(max_length):
        candidates = []
        for tokens, score in beams:
            if tokens[-1] == end_id and len(tokens) > 1 and bug != "no_stop":
                candidates.append((tokens, score))
                continue
            log_p = next_log_probs(model, source, tokens, pad)
            for token in np.flatnonzero(np.isfinite(log_p)):
                if bug == "probabilities":
                    new = score + np.exp(log_p[token])
                elif bug == "last_only":
                    new = log_p[token]
                else:
                    new = score + log_p[token]
                candidates.append((tokens + [int(token)], new))
        candidates.sort(key=lambda b: b[1], reverse=True)
        beams = candidates[:beam_size]
        if all(t[-1] == end_id for t, _ in beams) and bug != "no_stop":
            break

    def ranked(b):
        length = len(b[0]) - 1
        if bug == "no_penalty":
            return b[1]
        if bug == "plain_penalty":
            return b[1] / length**alpha
        if bug == "with_start":
            return b[1] / ((5 + length + 1) / 6) ** alpha
        return b[1] / ((5 + length) / 6) ** alpha

    return max(beams, key=ranked)[0][1:]


def test_greedy_reference_passes():
    assert exercises.check_greedy_search(greedy) is None


@pytest.mark.parametrize(
    "bug, needle",
    [
        ("no_stop", "does not stop at [END]"),
        ("end_dropped", "[END] is left out"),
        ("with_start", "[START] is in the output"),
    ],
)
def test_greedy_mistakes_are_named(bug, needle):
    fails_naming(
        exercises.check_greedy_search, lambda *a: greedy(*a, bug=bug), needle, "kt.inference"
    )


def test_beam_reference_passes():
    assert exercises.check_beam_search(beam) is None


def test_search_output_padded_like_kt_inference_passes():
    """Tokens padded with 0 to max_length (as `kt.inference` returns them) are accepted, and
    the model passed to the student's function also answers `predict`."""

    def padded(model, source, start_id, end_id, max_length):
        tokens = greedy(model, source, start_id, end_id, max_length)
        logits = model.predict({"source": source, "target": np.array([[start_id]])}, verbose=0)
        assert logits.shape[:2] == (1, 1)
        return np.array(tokens + [0] * (max_length - len(tokens)))

    assert exercises.check_greedy_search(padded) is None


@pytest.mark.parametrize(
    "bug, needle",
    [
        ("one_beam", "only one beam is kept"),
        ("no_stop", "does not stop at [END]"),
        ("no_penalty", "no length penalty"),
        ("plain_penalty", "length ** alpha"),
        ("with_start", "the length counts [START]"),
        ("probabilities", "probabilities summed"),
        ("last_only", "last token's log-probability"),
        ("pad_after", "[PAD] counted in the log-softmax"),
    ],
)
def test_beam_mistakes_are_named(bug, needle):
    fails_naming(exercises.check_beam_search, lambda *a: beam(*a, bug=bug), needle)


def test_python_searches_are_kt_inferences():
    """The checker's Python searches (its mistakes switched off) give `kt.inference`'s tokens,
    and its cases tell the searches apart: beam search differs from greedy, alpha matters,
    some sentences end early."""
    model, sources = search_checks.traced_search_model(), search_checks.search_sources()
    greedy_ids = search_checks._library_greedy(
        model.model, sources, search_checks.SEARCH_MAX_LENGTH
    )
    beams = search_checks._library_beams(
        model.model, sources, search_checks.SEARCH_MAX_LENGTH, 3, (0.0, 2.0)
    )
    for index, source in enumerate(sources):
        scorer = search_checks._Scorer(model, source)
        assert (
            search_checks.python_greedy(scorer, search_checks.SEARCH_MAX_LENGTH)
            == greedy_ids[index]
        )
        for alpha in (0.0, 2.0):
            found = search_checks.python_beam(scorer, search_checks.SEARCH_MAX_LENGTH, 3, alpha)
            assert found == beams[alpha][index], (index, alpha)
    assert any(g != b for g, b in zip(greedy_ids, beams[0.0], strict=True))
    assert any(a != b for a, b in zip(beams[0.0], beams[2.0], strict=True))
    assert any(ids[-1] == search_checks.SEARCH_END for ids in greedy_ids)


# 5. Corpus BLEU


def bleu(hypotheses, references, bug=None):
    from collections import Counter

    def grams(words, n):
        return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))

    if bug == "sentence_average":
        return np.mean([bleu([h], [r]) for h, r in zip(hypotheses, references, strict=True)])
    matches, totals, c, r = [0] * 4, [0] * 4, 0, 0
    for hyp, ref in zip(hypotheses, references, strict=True):
        hyp, ref = hyp.split(), ref.split()
        c, r = c + len(hyp), r + len(ref)
        for n in range(1, 5):
            h, g = grams(hyp, n), grams(ref, n)
            if bug == "unclipped":
                matches[n - 1] += sum(k for gram, k in h.items() if gram in g)
            else:
                matches[n - 1] += sum(min(k, g[gram]) for gram, k in h.items())
            totals[n - 1] += sum(h.values())
    if min(matches) == 0:
        return 0.0
    precisions = [m / t for m, t in zip(matches, totals, strict=True)]
    if bug == "arithmetic":
        mean = np.mean(precisions)
    else:
        mean = np.exp(np.mean(np.log(precisions)))
    brevity = 1.0 if c >= r or bug == "no_brevity" else np.exp(1 - r / c)
    return 100 * brevity * mean


def test_bleu_reference_passes():
    assert exercises.check_corpus_bleu(bleu) is None


@pytest.mark.parametrize(
    "bug, needle",
    [
        ("unclipped", "unclipped n-gram counts"),
        ("no_brevity", "no brevity penalty"),
        ("sentence_average", "sentence BLEU averaged"),
        ("arithmetic", "arithmetic mean of the precisions"),
    ],
)
def test_bleu_mistakes_are_named(bug, needle):
    fails_naming(exercises.check_corpus_bleu, lambda h, r: bleu(h, r, bug), needle, "sacrebleu")


def test_python_bleu_is_sacrebleus_on_real_sentences():
    """Within 0.01 BLEU of sacrebleu (tokenize="none", no smoothing) on the checker's corpora
    and on the translations notebook 07 shows."""
    import sacrebleu

    scorer = sacrebleu.BLEU(tokenize="none", smooth_method="none")
    corpora = list(text_checks._BLEU_CASES) + [
        (
            ["Quiero comprar un coche nuevo.", "La cena está en mí.", "Tom parece feliz hoy."],
            [
                "Quiero comprar un coche nuevo.",
                "La cena va por mi cuenta.",
                "Hoy Tom parece feliz.",
            ],
        )
    ]
    for hypotheses, references in corpora:
        want = scorer.corpus_score(list(hypotheses), [list(references)]).score
        assert abs(text_checks.python_bleu(hypotheses, references) - want) < 0.01
        assert abs(bleu(hypotheses, references) - want) < 0.01


def test_a_tensorflow_error_in_the_students_code_reads_plainly():
    def broken(model, source, start_id, end_id, max_length, beam_size, alpha):
        import tensorflow as tf

        return tf.reshape(tf.constant([1, 2, 3]), [2, 2])

    message = fails_naming(exercises.check_beam_search, broken, "failed: Input to reshape")
    assert "{{" not in message and "[Op:" not in message, message
    assert "tensor with 3 values" in message, message
