"""Padding-aware token loss and accuracies: a position counts when its label is not `pad_id`."""

from typing import Any

import keras
from keras import ops

from keras_transformer._validation import check_int, check_number

__all__ = ["MaskedAccuracy", "MaskedSparseCategoricalCrossentropy"]

_REDUCTIONS = ("sum_over_batch_size", "mean", "mean_with_sample_weight", "sum", "none", None)


def _check_pad_id(pad_id: Any) -> int:
    return check_int("pad_id", pad_id, minimum=None)  # the padding id (any int), e.g. 0


def _labels_as_int(y_true: Any, y_pred: Any) -> Any:
    """Integer labels `(batch, seq_len)`; accepts a trailing axis of size 1."""
    y_true = ops.convert_to_tensor(y_true)
    if len(y_true.shape) == len(y_pred.shape) and y_true.shape[-1] == 1:
        y_true = ops.squeeze(y_true, axis=-1)
    if len(y_true.shape) != len(y_pred.shape) - 1:
        raise ValueError(
            f"y_true has shape {tuple(y_true.shape)} and y_pred has shape "
            f"{tuple(y_pred.shape)}; expected integer labels (batch, seq_len) for "
            "predictions (batch, seq_len, vocab_size)."
        )
    return ops.cast(y_true, "int32")


def _weights_like(sample_weight: Any, values: Any) -> Any:
    """float32 weights broadcastable to `values` (per sample or per token)."""
    sample_weight = ops.cast(ops.convert_to_tensor(sample_weight), "float32")
    rank = len(values.shape)
    if len(sample_weight.shape) == rank + 1 and sample_weight.shape[-1] == 1:
        sample_weight = ops.squeeze(sample_weight, axis=-1)
    while len(sample_weight.shape) < rank:
        sample_weight = ops.expand_dims(sample_weight, axis=-1)
    return sample_weight


def _scale_for_replicas(loss: Any) -> Any:
    """Divide by the replica count under tf.distribute, as Keras' own losses do."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        loss = loss * (1.0 / tf.distribute.get_strategy().num_replicas_in_sync)
    return loss


@keras.saving.register_keras_serializable(package="keras_transformer")
class MaskedSparseCategoricalCrossentropy(keras.losses.Loss):
    """Token cross-entropy averaged over the non-padding tokens of the batch (float32 logits).

    Unsmoothed, `SparseCategoricalCrossentropy(ignore_class=pad_id)`; smoothed, a token costs
    `(1 - eps) * -log p[label] + eps * mean_v(-log p[v])`. Masking: labels equal to `pad_id`
    neither contribute nor count (a `y_pred` mask is ignored); no real token gives 0.

    Args:
        label_smoothing: float in [0, 1); the paper uses 0.1.
        pad_id: label id that marks padding.
        from_logits: whether `y_pred` are logits (else probabilities).
        reduction: `"sum_over_batch_size"`/`"mean"` (per real token), `"mean_with_sample_weight"`,
            `"sum"`, or `"none"`/`None` (per-token losses).
        name: name of the loss.

    Call arguments:
        y_true: integer labels `(batch, seq_len)` (or `(batch, seq_len, 1)`).
        y_pred: logits or probabilities `(batch, seq_len, vocab_size)`, any float dtype.
        sample_weight: optional weights `(batch,)` or `(batch, seq_len)`.

    Returns:
        Scalar float32 loss (per-token losses `(batch, seq_len)` for `reduction="none"`).

    Example:
    >>> import numpy as np
    >>> labels = np.array([[3, 1, 0, 0]])  # two real tokens, two padding
    >>> logits = np.zeros((1, 4, 5), "float32")  # uniform over 5 tokens
    >>> loss = MaskedSparseCategoricalCrossentropy()
    >>> float(loss(labels, logits))  # log(5): padding does not dilute the mean
    1.609438
    >>> loss = MaskedSparseCategoricalCrossentropy(label_smoothing=0.1)
    >>> float(loss(labels, logits))  # a uniform prediction costs log(5) for any target
    1.609438

    Reference:
        Vaswani et al., "Attention Is All You Need", NeurIPS 2017, section 5.4; Szegedy et
        al., "Rethinking the Inception Architecture for Computer Vision", CVPR 2016, section 7.
    """

    def __init__(
        self,
        label_smoothing: float = 0.0,
        pad_id: int = 0,
        from_logits: bool = True,
        reduction: str | None = "sum_over_batch_size",
        name: str = "masked_sparse_categorical_crossentropy",
    ) -> None:
        if reduction not in _REDUCTIONS:
            raise ValueError(
                f"reduction={reduction!r} is not supported; use one of {_REDUCTIONS}. "
                "The default 'sum_over_batch_size' averages over non-padding tokens."
            )
        super().__init__(name=name, reduction=reduction, dtype="float32")
        hint = " Pass 0.0 for no smoothing or 0.1 as in the paper."
        label_smoothing = check_number("label_smoothing", label_smoothing, 0.0, 1.0, hint=hint)
        if not isinstance(from_logits, bool):
            raise TypeError(
                f"from_logits={from_logits!r} must be True (y_pred are logits) or "
                "False (y_pred are probabilities)."
            )
        self.label_smoothing, self.from_logits = float(label_smoothing), from_logits
        self.pad_id = _check_pad_id(pad_id)

    def call(self, y_true: Any, y_pred: Any) -> Any:
        """Per-token losses `(batch, seq_len)` in float32, 0 at padding."""
        y_pred = ops.cast(ops.convert_to_tensor(y_pred), "float32")
        return self._token_losses(_labels_as_int(y_true, y_pred), y_pred)

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        with keras.name_scope(self.name):
            y_pred = ops.cast(ops.convert_to_tensor(y_pred), "float32")
            labels = _labels_as_int(y_true, y_pred)  # (batch, seq_len)
            token_losses = self._token_losses(labels, y_pred)  # (batch, seq_len)
            weights = not_pad = ops.cast(ops.not_equal(labels, self.pad_id), "float32")
            if sample_weight is not None:
                weights = weights * _weights_like(sample_weight, token_losses)
            weighted = token_losses * weights  # (batch, seq_len)
            if self.reduction in (None, "none"):
                return weighted
            total = ops.sum(weighted)
            if self.reduction == "sum":
                return total
            by_weight = self.reduction == "mean_with_sample_weight"
            denominator = ops.sum(weights if by_weight else not_pad)  # else per real token
            return _scale_for_replicas(ops.divide_no_nan(total, denominator))

    def _token_losses(self, labels: Any, y_pred: Any) -> Any:
        # labels: (batch, seq_len) int32; y_pred: (batch, seq_len, vocab) float32
        if not self.from_logits:  # clip, then renormalise in log space, as Keras does
            epsilon = keras.config.epsilon()
            y_pred = ops.log(ops.clip(y_pred, epsilon, 1.0 - epsilon))
        log_probs = ops.log_softmax(y_pred, axis=-1)  # (batch, seq_len, vocab)
        # Padding ids may lie outside the vocabulary (e.g. -1): gather a safe id there.
        not_pad = ops.not_equal(labels, self.pad_id)  # (batch, seq_len)
        safe_labels = ops.where(not_pad, labels, ops.zeros_like(labels))
        nll = -ops.take_along_axis(log_probs, safe_labels[..., None], axis=-1)[..., 0]
        if self.label_smoothing:
            smooth = -ops.mean(log_probs, axis=-1)  # (batch, seq_len)
            nll = (1.0 - self.label_smoothing) * nll + self.label_smoothing * smooth
        return ops.where(not_pad, nll, ops.zeros_like(nll))

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "label_smoothing": self.label_smoothing,
            "pad_id": self.pad_id,
            "from_logits": self.from_logits,
        }


@keras.saving.register_keras_serializable(package="keras_transformer")
class MaskedAccuracy(keras.metrics.Metric):
    """Fraction of non-padding tokens whose arg-max prediction is the label.

    Sums are float64, so an epoch's value is exact. Masking: labels equal to `pad_id` are not
    counted (a mask on `y_pred` is ignored).

    Args:
        pad_id: label id that marks padding.
        name: name of the metric.
        dtype: dtype of the result (float32 when None).

    Call arguments:
        y_true: integer labels `(batch, seq_len)` (or `(batch, seq_len, 1)`).
        y_pred: logits or probabilities `(batch, seq_len, vocab_size)`.
        sample_weight: optional weights `(batch,)` or `(batch, seq_len)` per token.

    Returns:
        Scalar, correct non-padding tokens / non-padding tokens.

    Example:
    >>> import numpy as np
    >>> metric = MaskedAccuracy()
    >>> logits = np.eye(4, dtype="float32")[None]  # predicts 0, 1, 2, 3
    >>> metric.update_state(np.array([[1, 1, 2, 0]]), logits)  # 2 of 3 real tokens right
    >>> metric.update_state(np.array([[0, 1, 0, 0]]), logits)  # 1 of 1 right
    >>> float(metric.result())  # 3 / 4, not the mean of batch accuracies (5 / 6)
    0.75
    """

    def __init__(self, pad_id: int = 0, name: str = "masked_accuracy", dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.pad_id = _check_pad_id(pad_id)
        self.correct, self.count = (
            self.add_variable(shape=(), initializer="zeros", dtype="float64", name=n)
            for n in ("correct", "count")
        )

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        y_pred = ops.convert_to_tensor(y_pred)
        labels = _labels_as_int(y_true, y_pred)  # (batch, seq_len)
        predicted = ops.cast(ops.argmax(y_pred, axis=-1), "int32")  # (batch, seq_len)
        weights = ops.cast(ops.not_equal(labels, self.pad_id), "float64")
        if sample_weight is not None:
            weights = weights * ops.cast(_weights_like(sample_weight, weights), "float64")
        hits = ops.cast(ops.equal(predicted, labels), "float64") * weights
        self.correct.assign_add(ops.sum(hits))
        self.count.assign_add(ops.sum(weights))

    def result(self) -> Any:
        return ops.cast(ops.divide_no_nan(self.correct, self.count), self.dtype)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "pad_id": self.pad_id}


@keras.saving.register_keras_serializable(package="keras_transformer")
class MaskedSequenceAccuracy(MaskedAccuracy):
    """Fraction of sequences whose every non-padding token is predicted right (teacher forced).

    Rows with no real token are not counted; `sample_weight` weighs whole rows `(batch,)`.

    Example:
    >>> import numpy as np
    >>> metric = MaskedSequenceAccuracy()
    >>> logits = np.eye(4, dtype="float32")[None]  # predicts 0, 1, 2, 3
    >>> metric.update_state(np.array([[0, 1, 2, 0], [1, 1, 2, 3]]), np.repeat(logits, 2, 0))
    >>> float(metric.result())  # the first row is right where it counts, the second is not
    0.5
    """

    def __init__(self, pad_id: int = 0, name: str = "sequence_accuracy", dtype: Any = None) -> None:
        super().__init__(pad_id=pad_id, name=name, dtype=dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        y_pred = ops.convert_to_tensor(y_pred)
        labels = _labels_as_int(y_true, y_pred)  # (batch, seq_len)
        predicted = ops.cast(ops.argmax(y_pred, axis=-1), "int32")
        real = ops.not_equal(labels, self.pad_id)
        right = ops.all(ops.logical_or(ops.equal(predicted, labels), ~real), axis=-1)
        rows = ops.cast(ops.any(real, axis=-1), "float64")  # (batch,)
        if sample_weight is not None:
            rows = rows * ops.cast(ops.reshape(sample_weight, (-1,)), "float64")
        self.correct.assign_add(ops.sum(ops.cast(right, "float64") * rows))
        self.count.assign_add(ops.sum(rows))
