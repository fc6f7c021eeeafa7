"""Text generation with a decoder-only model: greedy, temperature, top-k, top-p."""

import collections

import keras
import numpy as np
import tensorflow as tf

from keras_transformer._validation import check_int, check_number
from keras_transformer.errors import UserInputError
from keras_transformer.inference.incremental import IncrementalDecoder
from keras_transformer.inference.search import continue_tokens
from keras_transformer.inference.translator import PrefixTranslator

_TEMPERATURE = " 1 keeps the model's distribution; below 1 sharpens it."


def filter_logits(logits, *, temperature: float = 1.0, top_k=None, top_p=None):
    """Scale by temperature, keep the `top_k` best and the fewest reaching `top_p`; others: -inf.

    Example:
    >>> logits = tf.math.log([[0.5, 0.3, 0.15, 0.05]])
    >>> np.isinf(filter_logits(logits, top_k=2).numpy()).tolist()
    [[False, False, True, True]]
    >>> np.isinf(filter_logits(logits, top_p=0.75).numpy()).tolist()
    [[False, False, True, True]]
    """
    logits = tf.cast(logits, tf.float32) / temperature
    minus_inf = tf.fill(tf.shape(logits), float("-inf"))
    if top_k is not None:
        kth = tf.math.top_k(logits, k=top_k).values[:, -1:]
        logits = tf.where(logits < kth, minus_inf, logits)
    if top_p is not None:
        order = tf.argsort(logits, axis=-1, direction="DESCENDING")
        probs = tf.nn.softmax(tf.gather(logits, order, batch_dims=1))
        # keep a token while the probability before it is below top_p (the first always)
        keep_sorted = tf.cumsum(probs, axis=-1, exclusive=True) < top_p
        keep = tf.gather(keep_sorted, tf.argsort(order), batch_dims=1)  # in vocabulary order
        logits = tf.where(keep, logits, minus_inf)
    return logits


def generate(
    model: keras.Model,
    prompts,
    *,
    max_length: int,
    end_id: int | None = None,
    sample: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int = 0,
    use_cache: bool = True,
) -> np.ndarray:
    """Continue each prompt with a model from `build_language_model`.

    Args:
        model: a decoder-only model.
        prompts: int `(batch, prompt_len)`, 0-padded on the right, >= 1 token a row.
        max_length: total length of prompt plus continuation (cache size).
        end_id: stop a row when it produces this id (and pad after it).
        sample: draw from the distribution instead of taking the arg-max.
        temperature: divides the logits before sampling (> 0; below 1 sharpens).
        top_k: sample among the `top_k` most likely tokens (1 <= top_k <= vocab).
        top_p: sample among the fewest tokens whose probability reaches `top_p` (in (0, 1]).
        seed: seed of the stateless sampler; the same seed gives the same text.
        use_cache: key/value cache, or re-run the model on the prefix each step.

    Returns:
        int32 `(batch, max_length)`: prompt then generated tokens, 0 after `end_id`.

    Example:
    >>> from keras_transformer.models import build_language_model
    >>> lm = build_language_model(20, num_layers=1, d_model=8, num_heads=2, dff=16)
    >>> out = generate(lm, np.array([[2, 5]]), max_length=6, sample=True, top_k=3, seed=1)
    >>> out.shape, out[0, :2].tolist()
    ((1, 6), [2, 5])
    """
    prompts = np.asarray(prompts, dtype="int32")
    if prompts.ndim != 2 or prompts.shape[1] > max_length:
        raise ValueError(
            f"prompts must be (batch, prompt_len) with prompt_len <= "
            f"max_length={max_length}; received shape {prompts.shape}."
        )
    lengths = (prompts != 0).sum(axis=1)
    if (lengths == 0).any():
        raise ValueError(
            "every prompt needs at least one token (e.g. [START]); found an empty row."
        )
    check_number("temperature", temperature, 0.0, open_minimum=True, hint=_TEMPERATURE)
    vocab_size = int(model.outputs[0].shape[-1])
    if top_k is not None:
        hint = f" It is at most vocab_size={vocab_size}; None: no top-k filter."
        if check_int("top_k", top_k, hint=hint) > vocab_size:
            raise UserInputError(
                f"top_k must be at most {vocab_size}; received top_k={top_k}.{hint}"
            )
    if top_p is not None:
        hint = " None: no nucleus filter."
        check_number("top_p", top_p, 0.0, 1.0, open_minimum=True, open_maximum=False, hint=hint)
    buffer = np.pad(prompts, [(0, 0), (0, max_length - prompts.shape[1])])
    settings = (max_length, end_id, sample, temperature, top_k, top_p, seed, use_cache)
    key = (id(model), settings)  # the entry holds the model, so its id is not reused meanwhile
    if key not in _COMPILED:  # one traced loop per model and settings: no retracing on a rerun
        _COMPILED[key] = _compile(model, *settings)
        while len(_COMPILED) > _COMPILED_MAX:
            _COMPILED.popitem(last=False)
    run = _COMPILED[key]
    return run(tf.constant(buffer), tf.constant(lengths, tf.int32)).numpy()


_COMPILED: collections.OrderedDict = collections.OrderedDict()
"""The compiled generation loops of the last `_COMPILED_MAX` (model, settings): a new
`tf.function` per call would trace every time, and TensorFlow warns about retracing."""
_COMPILED_MAX = 8


def _compile(model, max_length, end_id, sample, temperature, top_k, top_p, seed, use_cache):
    decoder = IncrementalDecoder(model, max_length, use_cache=use_cache)

    def choose(logits, t):
        filtered = filter_logits(logits, temperature=temperature, top_k=top_k, top_p=top_p)
        seeds = tf.stack([tf.constant(seed, tf.int32), tf.cast(t, tf.int32)])
        return tf.random.stateless_categorical(filtered, 1, seed=seeds, dtype=tf.int32)[:, 0]

    @tf.function(reduce_retracing=True)
    def run(tokens, prompt_lengths):
        state = decoder.initial_state(batch_size=tf.shape(tokens)[0])
        end, pick = (-1 if end_id is None else end_id), (choose if sample else None)
        return continue_tokens(decoder, tokens, prompt_lengths, state, end_id=end, choose=pick)

    return run


def translate_by_prefix(
    model: keras.Model, tokenizer, sources: list[str], max_length: int, *, batch_size: int = 256
) -> list[str]:
    """Greedy translations by a decoder-only model (`PrefixTranslator`), `batch_size` at a time.

    Args:
        model, tokenizer: a `build_language_model` trained on `prefix_sequences`, its tokenizer.
        sources: source strings.
        max_length: longest framed side (the target gets `max_length - 1` steps).
        batch_size: prompts decoded together.

    Returns:
        The detokenized targets, in order.
    """
    translator = PrefixTranslator(model, tokenizer, max_length=max_length)
    batches = range(0, len(sources), batch_size)
    return [t for i in batches for t in translator(list(sources[i : i + batch_size]))]
