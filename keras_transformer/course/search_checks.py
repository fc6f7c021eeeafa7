"""Checkers of notebook 13's decoding: greedy search and beam search with the GNMT length
penalty, compared with `kt.inference`'s searches on a fixed-weight model the notebook does not
show; the mistake is named by running a plain-Python search with each classic mistake switched
in."""

from __future__ import annotations

import functools

import numpy as np

from keras_transformer.course.checking import (
    fail,
    run,
    student_facing,
)

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
