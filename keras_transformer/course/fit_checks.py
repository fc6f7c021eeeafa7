"""Checker of the graded `model.fit` assignment (`course/assignments/fit_a_transformer.ipynb`):
the student's trained encoder-decoder, scored on held-out sequences it decodes greedily.

The score is the exact-match rate of greedy decoding (one token at a time, the model's own
previous tokens fed back, section 3 of the paper) on held-out sources padded to a length the
training never used, as a served model sees them in other batches. A model trained without the
causal mask reads the next target token during teacher forcing and has none to read when it
decodes; one without padding masks changes its answer with the amount of padding. When the
score is below the threshold the message names what the probes find: a decoder that sees later
tokens, logits that move with source padding, a compiled loss that counts padded labels. The
last mistake costs the reverse task little (measured in docs/teaching.md), so a compiled loss
that counts padding fails the check whatever the score.
"""

import keras
import numpy as np

from keras_transformer.course.checking import fail, run, student_facing

_CAUSAL = (
    "the decoder sees later target tokens: its self-attention has no causal mask (section "
    "3.2.3); teacher forcing let it copy the next token in training, and greedy decoding has "
    "no next token to copy. Use kt.layers.DecoderLayer or SelfAttention(..., causal=True)"
)
_PADDING = (
    "the logits change when padding is appended to the source: pass the padding mask "
    "(kt.layers.PaddingMask()(source)) to the encoder's self-attention (padding_mask=) and to "
    "the cross-attention (context_padding_mask=)"
)
_LOSS = (
    "the compiled loss counts the padded labels (0): the model learns to predict padding and "
    "the mean is taken over padding too; use "
    "keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0) or your "
    "masked_loss of tutorial 07"
)


def _logits(model, source, target) -> np.ndarray:
    out = run("model", model, {"source": source, "target": target}, training=False)
    return np.asarray(keras.ops.convert_to_numpy(out), dtype="float64")


def greedy_decode(model, source: np.ndarray, start: int, end: int, max_length: int) -> list:
    """The token ids `model` writes for each source row, greedily, up to `end` (excluded).

    Args:
        model: a Keras model called on `{"source": (batch, src_len), "target": (batch, t)}` ids
            that returns logits `(batch, t, vocab_size)`.
        source: `(batch, src_len)` int ids, 0 is padding.
        start: the id the decoder starts from.
        end: the id that ends a sequence.
        max_length: the most tokens to write.

    Returns:
        One list of ids per row.
    """
    batch = source.shape[0]
    target = np.full((batch, 1), start, "int32")  # (batch, 1)
    for _ in range(max_length):
        logits = _logits(model, source, target)  # (batch, t, vocab_size)
        if logits.ndim != 3 or logits.shape[:2] != target.shape:
            fail(
                f"model returned shape {logits.shape}; expected logits (batch, tgt_len, "
                f"vocab_size) with batch, tgt_len = {target.shape}"
            )
        target = np.concatenate([target, logits[:, -1].argmax(-1)[:, None].astype("int32")], 1)
    written = []
    for row in target[:, 1:].tolist():
        written.append(row[: row.index(end)] if end in row else row)
    return written


def exact_match(model, source, targets, start: int, end: int) -> float:
    """The fraction of rows whose greedy decoding equals `targets` (lists of ids)."""
    max_length = max(len(t) for t in targets) + 1
    written = greedy_decode(model, np.asarray(source, "int32"), start, end, max_length)
    return float(np.mean([w == list(t) for w, t in zip(written, targets, strict=True)]))


def diagnose(model, source: np.ndarray, start: int) -> list[str]:
    """What the probes find wrong with a trained model and its compiled loss."""
    found = []
    rng = np.random.default_rng(0)
    source = np.asarray(source[:8], "int32")
    vocab = int(source.max()) + 1
    target = np.concatenate(
        [np.full((len(source), 1), start, "int32"), rng.integers(3, vocab, (len(source), 5))],
        axis=1,
    ).astype("int32")  # (8, 6)
    changed = target.copy()
    changed[:, -1] = rng.integers(3, vocab, len(source))
    first, second = _logits(model, source, target), _logits(model, source, changed)
    if np.abs(first[:, :-1] - second[:, :-1]).max() > 1e-4:
        found.append(_CAUSAL)
    padded = np.pad(source, ((0, 0), (0, 4)))
    if np.abs(_logits(model, padded, target) - first).max() > 1e-3:
        found.append(_PADDING)
    loss = getattr(model, "loss", None)
    if loss is not None and callable(loss):
        labels = target[:, 1:].copy()
        labels[:, 3:] = 0  # (8, 5), the last two positions padding
        logits = first[:, :-1].astype("float32")
        moved = logits.copy()
        moved[:, 3:] += 5 * rng.standard_normal(moved[:, 3:].shape)
        try:
            a, b = (float(keras.ops.convert_to_numpy(loss(labels, x))) for x in (logits, moved))
        except Exception:  # a loss the probe cannot call: say nothing about it
            a = b = 0.0
        if abs(a - b) > 1e-4:
            found.append(_LOSS)
    return found


@student_facing
def check_trained_translator(
    model, source, targets, *, start: int, end: int, threshold: float, reference: str = ""
) -> None:
    """Checks a trained encoder-decoder by its greedy exact match on held-out data.

    Args:
        model: the student's trained Keras model: `{"source", "target"}` ids -> logits.
        source: `(n, src_len)` held-out source ids, 0 padding.
        targets: the n expected target id lists (without start and end).
        start: the decoder's start id.
        end: the id that ends a sequence.
        threshold: the lowest passing exact match, a fraction.
        reference: how the reference solution scores, quoted in the message.

    Raises:
        AssertionError: naming the score and, where a probe finds one, the mistake; also when
            the score passes but the compiled loss counts the padded labels.
    """
    if not isinstance(model, keras.Model):
        fail(f"model is a {type(model).__name__}, not a keras.Model; build_model must return one")
    score = exact_match(model, source, targets, start, end)
    found = diagnose(model, np.asarray(source), start)
    also = f" (the reference solution scores {reference})" if reference else ""
    if score < threshold:
        why = (
            "; ".join(found)
            if found
            else (
                "no masking mistake found: check the sizes, the learning rate and that model.fit "
                "ran for the given epochs"
            )
        )
        fail(
            f"held-out exact match {score:.3f} is below the pass mark {threshold:.2f}{also}: {why}"
        )
    if _LOSS in found:  # on this small task the score barely shows it (docs/teaching.md)
        fail(f"held-out exact match {score:.3f}, but {_LOSS}")
