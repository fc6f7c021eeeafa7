"""Greedy and beam search over an `IncrementalDecoder`: `tf.while_loop`s with static
shapes (traced once for every length) that stop when every row produced `[END]`."""

import numpy as np
import tensorflow as tf

from keras_transformer.inference.incremental import IncrementalDecoder


def continue_tokens(decoder, tokens, prompt_lengths, state, *, end_id: int, choose=None):
    """The loop under every search: one position a step, the prompt forced, then `choose` picks.

    Args:
        decoder: an `IncrementalDecoder`; `state` from its `initial_state(...)`.
        tokens: int32 `(batch, decoder.max_length)` buffer holding the prompts.
        prompt_lengths: int32 `(batch,)`, at least 1 (`[START]`).
        end_id: id that ends a row (-1: never).
        choose: `(logits (batch, vocab), t) -> int32 (batch,)`; None for arg-max.

    Returns:
        int32 `(batch, decoder.max_length)`: prompts and continuations, 0 after `end_id`.
    """
    done = tf.zeros([tf.shape(tokens)[0]], tf.bool)

    def body(t, tokens, done, state):
        logits, state = decoder.step(tokens, t, state)  # (batch, vocab)
        pick = choose or (lambda logits, t: tf.argmax(logits, axis=-1, output_type=tf.int32))
        token = pick(never_padding(logits), t)
        in_prompt = t + 1 < prompt_lengths
        token = tf.where(in_prompt, tokens[:, t + 1], tf.where(done, 0, token))
        done = tf.logical_or(done, tf.logical_and(~in_prompt, tf.equal(token, end_id)))
        return t + 1, _write(tokens, t + 1, token), done, state

    def cond(t, tokens, done, state):
        return tf.logical_and(t < decoder.max_length - 1, tf.logical_not(tf.reduce_all(done)))

    return tf.while_loop(cond, body, (tf.constant(0), tokens, done, state))[1]


def _write(tokens, t, token):  # `tokens` with column `t` set to `token` (rows,)
    return tf.where(tf.equal(tf.range(tf.shape(tokens)[1]), t), token[:, None], tokens)


def never_padding(logits):
    """`logits` with `[PAD]` (id 0) at -inf: a generated 0 would read as padding
    to the full model (masks from `ids != 0`) but not to the step-by-step decoder."""
    is_pad = tf.equal(tf.range(tf.shape(logits)[-1]), 0)  # (vocab,)
    return tf.where(is_pad, tf.constant(float("-inf"), logits.dtype), logits)


def start_buffer(batch, start_id: int, length: int):
    """int32 `(batch, length)`: `[START]` then zeros."""
    return tf.concat([tf.fill([batch, 1], start_id), tf.zeros([batch, length - 1], tf.int32)], 1)


def greedy_search(decoder, source, *, start_id: int, end_id: int):
    """Most likely token at every step, from framed source ids `(batch, src_len)`.

    Returns:
        int32 `(batch, max_length - 1)`: generated tokens, `[END]` included, 0 after it.
    """
    batch = tf.shape(source)[0]
    tokens = start_buffer(batch, start_id, decoder.max_length)
    state = decoder.initial_state(*decoder.encode(source))
    return continue_tokens(decoder, tokens, tf.ones([batch], tf.int32), state, end_id=end_id)[:, 1:]


def greedy_decode(
    model,
    source_ids,
    *,
    start_id: int,
    end_id: int,
    max_length: int,
    batch_size: int = 128,
    use_cache: bool = False,
) -> np.ndarray:
    """Greedy translation of source ids (`use_cache=True`: the same tokens, faster).

    Args:
        model: a `build_transformer` model.
        source_ids: int array `(num, src_len)`, 0-padded, with START/END.
        start_id, end_id: ids of `[START]` and `[END]`.
        max_length: largest number of generated tokens (END included).
        batch_size: rows decoded at once.

    Returns:
        int32 `(num, max_length)`: generated tokens (START excluded, END included), 0 after.

    Example:
    >>> from keras_transformer.models import build_transformer
    >>> model = build_transformer(10, 12, num_layers=1, d_model=8, num_heads=2, dff=16)
    >>> greedy_decode(model, np.array([[2, 5, 6, 3]]), start_id=2, end_id=3, max_length=5).shape
    (1, 5)
    """
    source_ids = np.asarray(source_ids, dtype="int32")
    if source_ids.ndim != 2:
        raise ValueError(
            f"source_ids must be a 2-D batch (num, src_len); received shape {source_ids.shape}."
        )
    decoder = IncrementalDecoder(model, max_length + 1, use_cache=use_cache)
    results = [np.zeros((0, max_length), "int32")]
    for begin in range(0, len(source_ids), batch_size):
        source = tf.constant(source_ids[begin : begin + batch_size])
        results.append(greedy_search(decoder, source, start_id=start_id, end_id=end_id).numpy())
    return np.concatenate(results, axis=0)


def length_penalty(lengths, alpha: float):
    """GNMT length normalisation `((5 + length) / 6) ** alpha` (Wu et al., 2016)."""
    return tf.pow((5.0 + tf.cast(lengths, tf.float32)) / 6.0, alpha)


def beam_search(
    decoder, source, *, start_id: int, end_id: int, beam_size: int = 4, alpha: float = 0.6
):
    """Keep the `beam_size` most likely prefixes (summed log-probability) per sentence; a
    finished beam keeps its score, ranked at the end over `length_penalty(alpha)`.

    Returns:
        int32 `(batch, max_length - 1)`: the best beam of each sentence.
    """
    alphas = tf.reshape(tf.cast(alpha, tf.float32), [1])
    return beam_search_ranked(
        decoder, source, start_id=start_id, end_id=end_id, beam_size=beam_size, alphas=alphas
    )


def beam_search_ranked(decoder, source, *, start_id: int, end_id: int, beam_size: int, alphas):
    """`beam_search` once, its finished beams ranked by each of `alphas` (float32 `(n,)`).

    The length penalty only ranks the finished beams, so one search serves every alpha: the
    evaluation that compares alphas after training (`inference.decoding`) pays for one.

    Returns:
        int32 `(n * batch, max_length - 1)`: rows `i * batch .. (i + 1) * batch - 1` are the
        best beams under `alphas[i]`.
    """
    batch, k = tf.shape(source)[0], beam_size
    # Every sentence's state repeated k times: rows b*k .. b*k+k-1 are its beams.
    state = decoder.initial_state(*decoder.encode(source))
    state = decoder.reorder(state, tf.repeat(tf.range(batch), k))
    tokens = start_buffer(batch * k, start_id, decoder.max_length)
    # Only beam 0 is live at first, so the first step does not pick k copies.
    scores = tf.tile(tf.concat([[0.0], tf.fill([k - 1], -1e9)], 0)[None], [batch, 1])  # (batch, k)
    done, lengths = tf.zeros([batch * k], tf.bool), tf.zeros([batch * k], tf.int32)

    def body(t, tokens, scores, done, lengths, state):
        logits, state = decoder.step(tokens, t, state)  # (batch*k, vocab)
        vocab = tf.shape(logits)[-1]
        log_probs = tf.reshape(tf.nn.log_softmax(never_padding(logits)), [batch, k, vocab])
        # A finished beam may only "emit" padding, at no cost.
        pad_only = tf.one_hot(0, vocab, on_value=0.0, off_value=-1e9)
        log_probs = tf.where(tf.reshape(done, [batch, k, 1]), pad_only, log_probs)
        candidates = tf.reshape(scores[..., None] + log_probs, [batch, k * vocab])
        scores, flat = tf.math.top_k(candidates, k=k)  # (batch, k)
        beam, token = flat // vocab, tf.reshape(flat % vocab, [-1])
        rows = tf.reshape(beam + tf.range(batch)[:, None] * k, [-1])  # parent rows
        state = decoder.reorder(state, rows)
        done, lengths = (tf.gather(x, rows) for x in (done, lengths))
        tokens = _write(tf.gather(tokens, rows), t + 1, token)
        lengths = lengths + tf.cast(tf.logical_not(done), tf.int32)
        done = tf.logical_or(done, tf.equal(token, end_id))
        return t + 1, tokens, scores, done, lengths, state

    def cond(t, tokens, scores, done, lengths, state):
        return tf.logical_and(t < decoder.max_length - 1, tf.logical_not(tf.reduce_all(done)))

    loop = (tf.constant(0), tokens, scores, done, lengths, state)
    _, tokens, scores, _, lengths, _ = tf.while_loop(cond, body, loop)
    alphas = tf.reshape(tf.cast(alphas, tf.float32), [-1, 1, 1])  # (n, 1, 1)
    ranked = scores[None] / length_penalty(tf.reshape(lengths, [1, batch, k]), alphas)
    best = tf.argmax(ranked, axis=-1, output_type=tf.int32) + tf.range(batch) * k  # (n, batch)
    return tf.gather(tokens, tf.reshape(best, [-1]))[:, 1:]
