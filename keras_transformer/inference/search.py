"""Greedy and beam search over an `IncrementalDecoder`, as TensorFlow graphs.

`continue_tokens` is the one left-to-right loop (greedy, sampling, forced
prompts); `beam_search` keeps several prefixes per row. Neither ever generates
`[PAD]` (`never_padding`). Both loops are `tf.while_loop`s with static shapes (the token buffer and the
caches have `max_length` positions), so inside a `tf.function` the step is
traced once and serves every length. They stop when every sequence has
produced `[END]`, or after `max_length - 1` generated tokens.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keras_transformer.inference.incremental import IncrementalDecoder


def continue_tokens(decoder, tokens, prompt_lengths, state, *, end_id: int, choose=None):
    """The decoding loop: extend every row of `tokens` one position per step.

    Positions below a row's `prompt_lengths` are forced (the prompt is read
    through the decoder, filling its cache); after them each step appends the
    token `choose(logits, t)` picks (default: the arg-max). A row stops once it
    produced `end_id` (then only 0 follows); the loop ends when every row has
    stopped or the buffer is full. Every search of the package (greedy search,
    sampling, `greedy_decode`, `generate`, `Translator`, the export) runs here.

    Args:
        decoder: an `IncrementalDecoder` (with or without the cache).
        tokens: int32 `(batch, decoder.max_length)` buffer holding the prompts.
        prompt_lengths: int32 `(batch,)`, at least 1 (`[START]`).
        state: from `decoder.initial_state(...)`.
        end_id: id that ends a row (-1: never).
        choose: `(logits (batch, vocab), t) -> int32 (batch,)`; None for arg-max.

    Returns:
        int32 `(batch, decoder.max_length)`: prompts and continuations.
    """
    batch = tf.shape(tokens)[0]
    length = decoder.max_length
    done = tf.zeros([batch], tf.bool)

    def cond(t, tokens, done, state):
        return tf.logical_and(t < length - 1, tf.logical_not(tf.reduce_all(done)))

    def body(t, tokens, done, state):
        logits, state = decoder.step(tokens, t, state)  # (batch, vocab)
        logits = never_padding(logits)
        if choose is None:
            token = tf.argmax(logits, axis=-1, output_type=tf.int32)
        else:
            token = choose(logits, t)
        in_prompt = t + 1 < prompt_lengths
        token = tf.where(in_prompt, tokens[:, t + 1], tf.where(done, 0, token))
        done = tf.logical_or(done, tf.logical_and(~in_prompt, tf.equal(token, end_id)))
        tokens = tf.tensor_scatter_nd_update(
            tokens, tf.stack([tf.range(batch), tf.fill([batch], t + 1)], axis=1), token
        )
        return t + 1, tokens, done, state

    _, tokens, _, _ = tf.while_loop(cond, body, (tf.constant(0), tokens, done, state))
    return tokens


def never_padding(logits):
    """`logits` with `[PAD]` (id 0) at -inf: padding is never generated.

    A generated 0 would read as padding to the full model (its masks come from
    `ids != 0`) but not to the step-by-step decoder, and nothing after it could
    be trusted; an untrained model picks it as readily as any other id.
    """
    is_pad = tf.equal(tf.range(tf.shape(logits)[-1]), 0)  # (vocab,)
    return tf.where(is_pad, tf.constant(float("-inf"), logits.dtype), logits)


def start_buffer(batch, start_id: int, length: int):
    """int32 `(batch, length)`: `[START]` then zeros."""
    return tf.concat([tf.fill([batch, 1], start_id), tf.zeros([batch, length - 1], tf.int32)], 1)


def greedy_search(decoder, source, *, start_id: int, end_id: int):
    """Most likely token at every step.

    Args:
        decoder: an `IncrementalDecoder`.
        source: int32 `(batch, src_len)` framed source ids.
        start_id, end_id: ids of `[START]` and `[END]`.

    Returns:
        int32 `(batch, max_length - 1)`: generated tokens, `[END]` included, 0 after it.
    """
    context, source_mask = decoder.encode(source)
    batch = tf.shape(context)[0]
    tokens = continue_tokens(
        decoder,
        start_buffer(batch, start_id, decoder.max_length),
        tf.ones([batch], tf.int32),
        decoder.initial_state(context, source_mask),
        end_id=end_id,
    )
    return tokens[:, 1:]


def greedy_decode(
    model, source_ids, *, start_id: int, end_id: int, max_length: int, batch_size: int = 128,
    use_cache: bool = False,
) -> np.ndarray:  # fmt: skip
    """Greedy translation of source id sequences with a `build_transformer` model.

    The plain path by default: each step re-runs the decoder on the prefix
    generated so far (`use_cache=True` gives the same tokens, faster).

    Args:
        model: a `build_transformer` model.
        source_ids: int array `(num, src_len)`, 0-padded, with START/END.
        start_id, end_id: ids of `[START]` and `[END]`.
        max_length: largest number of generated tokens (END included).
        batch_size: rows decoded at once.
        use_cache: decode with the key/value cache.

    Returns:
        int32 array `(num, max_length)`: generated tokens (START excluded,
        END included), 0 after END.

    Example:

    >>> from keras_transformer.models import build_transformer
    >>> model = build_transformer(10, 12, num_layers=1, d_model=8, num_heads=2, dff=16)
    >>> out = greedy_decode(model, np.array([[2, 5, 6, 3]]), start_id=2, end_id=3, max_length=5)
    >>> out.shape
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
    """Keep the `beam_size` most likely prefixes at every step.

    Each step extends every live beam by every token, scores the candidates by
    summed log-probability, and keeps the best `beam_size` per sentence; a
    finished beam (one that produced `[END]`) is carried on unchanged with its
    score frozen. At the end the beams are ranked by score divided by the GNMT
    length penalty with exponent `alpha` (0 ranks by raw log-probability,
    larger values favour longer outputs). With `beam_size=1` this is greedy
    search.

    Args:
        decoder: an `IncrementalDecoder`.
        source: int32 `(batch, src_len)`.
        start_id, end_id: ids of `[START]` and `[END]`.
        beam_size: beams per sentence.
        alpha: length-penalty exponent.

    Returns:
        int32 `(batch, max_length - 1)`: the best beam of each sentence.
    """
    context, source_mask = decoder.encode(source)
    batch = tf.shape(context)[0]
    k = beam_size
    length = decoder.max_length
    # Every sentence's state repeated k times: rows b*k .. b*k+k-1 are its beams.
    state = decoder.initial_state(context, source_mask)
    state = decoder.reorder(state, tf.repeat(tf.range(batch), k))
    tokens = tf.concat(
        [tf.fill([batch * k, 1], start_id), tf.zeros([batch * k, length - 1], tf.int32)], axis=1
    )
    # Only beam 0 is live at first, so the first step does not pick k copies.
    scores = tf.tile(tf.concat([[0.0], tf.fill([k - 1], -1e9)], 0)[None], [batch, 1])  # (batch, k)
    done = tf.zeros([batch, k], tf.bool)
    lengths = tf.zeros([batch, k], tf.int32)

    def cond(t, tokens, scores, done, lengths, state):
        return tf.logical_and(t < length - 1, tf.logical_not(tf.reduce_all(done)))

    def body(t, tokens, scores, done, lengths, state):
        logits, state = decoder.step(tokens, t, state)  # (batch*k, vocab)
        vocab = tf.shape(logits)[-1]
        log_probs = tf.reshape(tf.nn.log_softmax(never_padding(logits)), [batch, k, vocab])
        # A finished beam may only "emit" padding, at no cost.
        pad_only = tf.one_hot(0, vocab, on_value=0.0, off_value=-1e9)
        log_probs = tf.where(done[..., None], pad_only, log_probs)
        candidates = tf.reshape(scores[..., None] + log_probs, [batch, k * vocab])
        scores, flat = tf.math.top_k(candidates, k=k)  # (batch, k)
        beam = flat // vocab
        token = flat % vocab
        rows = tf.reshape(beam + tf.range(batch)[:, None] * k, [-1])  # parent rows
        tokens = tf.gather(tokens, rows)
        state = decoder.reorder(state, rows)
        done = tf.gather(tf.reshape(done, [-1]), rows)
        lengths = tf.gather(tf.reshape(lengths, [-1]), rows)
        token = tf.reshape(token, [-1])
        tokens = tf.tensor_scatter_nd_update(
            tokens, tf.stack([tf.range(batch * k), tf.fill([batch * k], t + 1)], axis=1), token
        )
        lengths = lengths + tf.cast(tf.logical_not(done), tf.int32)
        done = tf.logical_or(done, tf.equal(token, end_id))
        return (
            t + 1,
            tokens,
            scores,
            tf.reshape(done, [batch, k]),
            tf.reshape(lengths, [batch, k]),
            state,
        )

    _, tokens, scores, _, lengths, _ = tf.while_loop(
        cond, body, (tf.constant(0), tokens, scores, done, lengths, state)
    )
    ranked = scores / length_penalty(lengths, alpha)
    best = tf.argmax(ranked, axis=-1, output_type=tf.int32) + tf.range(batch) * k
    return tf.gather(tokens, best)[:, 1:]
