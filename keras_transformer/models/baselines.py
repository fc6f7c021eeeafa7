"""RNN and CNN sequence-to-sequence baselines for the comparison with the Transformer.

The course compares the Transformer's *direct function* with the RNN's *loop*
(and with a stack of convolutions). These builders make the other two columns
of that comparison trainable on exactly the same pipeline as
`build_transformer`: the same inputs `{"source", "target"}` of int ids (0 is
padding), the same float32 logits `(batch, tgt_len, target_vocab_size)`, so
`MaskedSparseCategoricalCrossentropy`, `MaskedAccuracy` and `make_dataset`
work unchanged.

Padding masks are explicit, as everywhere in the package: they are derived
from the ids by `PaddingMask` and passed to the recurrent layers (`mask=`),
to the attention layers (`mask=[None, source_mask]`) and, for the CNN, applied
by `ApplyPaddingMask` after every encoder block, so padding never changes the
logits of real positions. No mask is attached to the logits.
"""

from __future__ import annotations

import keras

from keras_transformer._validation import check_positive_int, check_rate
from keras_transformer.layers import ApplyPaddingMask, PaddingMask, PositionalEmbedding

_CELLS = {"lstm": keras.layers.LSTM, "gru": keras.layers.GRU}
_ATTENTIONS = ("luong", "bahdanau", None)


def _token_input(name: str) -> keras.KerasTensor:
    return keras.Input(shape=(None,), dtype="int32", name=name)


def _check_attention(attention) -> None:
    if attention not in _ATTENTIONS:
        raise ValueError(
            f"attention={attention!r} is not supported; use 'luong' "
            "(keras.layers.Attention, dot-product score), 'bahdanau' "
            "(keras.layers.AdditiveAttention) or None (no attention)."
        )


def _attend(decoded, encoded, source_mask, attention: str, units: int):
    """Attention of every decoder position over the encoder outputs, then Luong's
    attentional state `tanh(W [h_t; c_t])`."""
    if attention == "luong":
        layer = keras.layers.Attention(score_mode="dot", name="attention")
    else:
        layer = keras.layers.AdditiveAttention(name="attention")
    # query mask None: the output carries no mask; value mask hides padded sources.
    context = layer([decoded, encoded], mask=[None, source_mask])  # (batch, tgt_len, units)
    joined = keras.layers.Concatenate(name="attention_concat")([decoded, context])
    return keras.layers.Dense(units, activation="tanh", name="attentional_state")(joined)


def build_rnn_seq2seq(
    source_vocab_size: int,
    target_vocab_size: int,
    *,
    cell: str = "lstm",
    units: int = 128,
    attention: str | None = "luong",
    num_layers: int = 1,
    embedding_dim: int | None = None,
    dropout: float = 0.0,
    name: str = "rnn_seq2seq",
) -> keras.Model:
    """An RNN encoder-decoder (the loop), optionally with attention, as one Functional model.

    The encoder reads the source left to right with `num_layers` stacked
    LSTM or GRU layers; its final states start the decoder's layers, which
    read the target (shifted right, teacher forcing). Without attention
    everything the decoder knows about the source passes through that final
    state: a source token `T - t` positions from the end reaches it through
    `T - t` recurrent steps, the O(T) path length of Table 1 of the paper.
    With attention, every decoder position also reads a weighted sum of all
    encoder outputs (Luong et al. 2015's "global attention": dot-product
    scores with `keras.layers.Attention`, or Bahdanau et al. 2015's additive
    scores with `keras.layers.AdditiveAttention`), and the attentional state
    `tanh(W [h_t; c_t])` feeds the output projection. In both cases the
    attention is applied after the decoder RNN (Luong's wiring); Bahdanau's
    original also feeds the context back into the next recurrent step, which
    needs a custom cell and is not done here.

    Masking: the source padding mask (`ids != 0`) is passed to the encoder
    RNNs (padded steps neither update the state nor change the final state)
    and to the attention as the value mask. The decoder is causal by
    construction, so target padding cannot reach earlier positions.

    Args:
        source_vocab_size: source vocabulary size (0 is padding).
        target_vocab_size: target vocabulary size (0 is padding).
        cell: `"lstm"` or `"gru"`.
        units: hidden size of every recurrent layer (d in the course's table).
        attention: `"luong"`, `"bahdanau"` or `None` (the plain encoder-decoder).
        num_layers: stacked recurrent layers in the encoder and in the decoder.
        embedding_dim: token embedding size; default `units`.
        dropout: dropout on the embeddings and between stacked layers.
        name: model name.

    Inputs:
        a dict `{"source": int (batch, src_len), "target": int (batch, tgt_len)}`.

    Returns:
        A `keras.Model` with float32 logits `(batch, tgt_len, target_vocab_size)`.
        Layers are named `encoder_embedding`, `encoder_rnn_{i}`,
        `decoder_embedding`, `decoder_rnn_{i}`, `attention`, `logits`.

    Example:

    >>> import numpy as np
    >>> model = build_rnn_seq2seq(30, 40, cell="gru", units=16, attention="bahdanau")
    >>> logits = model({"source": np.array([[5, 6, 7, 0]]), "target": np.array([[2, 8, 9]])})
    >>> tuple(logits.shape), logits.dtype.name
    ((1, 3, 40), 'float32')

    Reference:
        Sutskever et al., "Sequence to Sequence Learning with Neural Networks", 2014;
        Bahdanau et al., "Neural Machine Translation by Jointly Learning to Align
        and Translate", 2015; Luong et al., "Effective Approaches to
        Attention-based Neural Machine Translation", 2015.
    """
    if cell not in _CELLS:
        raise ValueError(f"cell={cell!r} is not supported; use 'lstm' or 'gru'.")
    _check_attention(attention)
    for arg, value in (
        ("source_vocab_size", source_vocab_size),
        ("target_vocab_size", target_vocab_size),
        ("units", units),
        ("num_layers", num_layers),
    ):
        check_positive_int(arg, value)
    if embedding_dim is not None:
        check_positive_int("embedding_dim", embedding_dim)
    check_rate("dropout", dropout)
    embedding_dim = embedding_dim or units
    rnn_class = _CELLS[cell]

    source = _token_input("source")
    target = _token_input("target")
    source_mask = PaddingMask(name="encoder_padding_mask")(source)  # (batch, src_len)

    x = keras.layers.Embedding(source_vocab_size, embedding_dim, name="encoder_embedding")(source)
    x = keras.layers.Dropout(dropout, name="encoder_embedding_dropout")(x)
    final_states = []
    for i in range(num_layers):
        if i:
            x = keras.layers.Dropout(dropout, name=f"encoder_dropout_{i}")(x)
        x, *states = rnn_class(
            units, return_sequences=True, return_state=True, name=f"encoder_rnn_{i}"
        )(x, mask=source_mask)  # (batch, src_len, units)
        final_states.append(states)

    y = keras.layers.Embedding(target_vocab_size, embedding_dim, name="decoder_embedding")(target)
    y = keras.layers.Dropout(dropout, name="decoder_embedding_dropout")(y)
    for i in range(num_layers):
        if i:
            y = keras.layers.Dropout(dropout, name=f"decoder_dropout_{i}")(y)
        y = rnn_class(units, return_sequences=True, name=f"decoder_rnn_{i}")(
            y, initial_state=final_states[i]
        )  # (batch, tgt_len, units)

    if attention is not None:
        y = _attend(y, x, source_mask, attention, units)  # (batch, tgt_len, units)
    logits = keras.layers.Dense(target_vocab_size, dtype="float32", name="logits")(y)
    return keras.Model({"source": source, "target": target}, logits, name=name)


def build_cnn_seq2seq(
    source_vocab_size: int,
    target_vocab_size: int,
    *,
    filters: int = 128,
    kernel_size: int = 3,
    num_layers: int = 2,
    attention: str | None = "luong",
    dropout: float = 0.0,
    max_length: int = 512,
    name: str = "cnn_seq2seq",
) -> keras.Model:
    """A convolutional encoder-decoder (stacked `Conv1D`) as one Functional model.

    Tokens are embedded with the package's `PositionalEmbedding` (sinusoid
    positions, as in the Transformer, so that only the mixing layers differ).
    The encoder stacks `num_layers` blocks `LayerNorm(x + Conv1D(x))` with
    `padding="same"`; the decoder stacks the same blocks with causal
    convolutions (`padding="causal"`: position t sees targets `<= t` only),
    then attends over the encoder outputs (as `build_rnn_seq2seq` does) in
    the spirit of ConvS2S. A position sees `1 + num_layers * (kernel_size - 1)`
    neighbours in each stack: relating two positions `T` apart needs about
    `T / (kernel_size - 1)` layers, the O(T/k) path length of a CNN.

    Masking: `ApplyPaddingMask` zeroes the padded source positions after the
    embedding and after every encoder block, and the attention masks them, so
    the logits at real positions do not depend on padding.

    Args:
        source_vocab_size: source vocabulary size (0 is padding).
        target_vocab_size: target vocabulary size (0 is padding).
        filters: channels of every convolution and of the embeddings (d).
        kernel_size: convolution width (k).
        num_layers: convolution blocks in the encoder and in the decoder.
        attention: `"luong"`, `"bahdanau"` or `None` (then the decoder sees the
            source only through a masked mean of the encoder outputs, added to
            every target position).
        dropout: dropout on the embeddings and on every block's output.
        max_length: longest sequence the position table covers.
        name: model name.

    Inputs:
        a dict `{"source": int (batch, src_len), "target": int (batch, tgt_len)}`.

    Returns:
        A `keras.Model` with float32 logits `(batch, tgt_len, target_vocab_size)`.
        Layers are named `encoder_embedding`, `encoder_conv_{i}`,
        `decoder_embedding`, `decoder_conv_{i}`, `attention`, `logits`.

    Example:

    >>> import numpy as np
    >>> model = build_cnn_seq2seq(30, 40, filters=16, kernel_size=3, num_layers=2)
    >>> logits = model({"source": np.array([[5, 6, 7, 0]]), "target": np.array([[2, 8, 9]])})
    >>> tuple(logits.shape), logits.dtype.name
    ((1, 3, 40), 'float32')

    Reference:
        Gehring et al., "Convolutional Sequence to Sequence Learning", 2017;
        Vaswani et al., "Attention Is All You Need", 2017, section 4 and Table 1.
    """
    _check_attention(attention)
    for arg, value in (
        ("source_vocab_size", source_vocab_size),
        ("target_vocab_size", target_vocab_size),
        ("filters", filters),
        ("kernel_size", kernel_size),
        ("num_layers", num_layers),
        ("max_length", max_length),
    ):
        check_positive_int(arg, value)
    check_rate("dropout", dropout)

    source = _token_input("source")
    target = _token_input("target")
    source_mask = PaddingMask(name="encoder_padding_mask")(source)  # (batch, src_len)

    def block(h, prefix: str, i: int, padding: str):
        c = keras.layers.Conv1D(
            filters, kernel_size, padding=padding, activation="relu", name=f"{prefix}_conv_{i}"
        )(h)  # (batch, seq_len, filters)
        c = keras.layers.Dropout(dropout, name=f"{prefix}_dropout_{i}")(c)
        h = keras.layers.Add(name=f"{prefix}_residual_{i}")([h, c])
        return keras.layers.LayerNormalization(epsilon=1e-6, name=f"{prefix}_norm_{i}")(h)

    def embed(ids, vocab_size, prefix):
        h = PositionalEmbedding(
            vocab_size, filters, max_length=max_length, mask_zero=False, name=f"{prefix}_embedding"
        )(ids)  # (batch, seq_len, filters)
        return keras.layers.Dropout(dropout, name=f"{prefix}_embedding_dropout")(h)

    x = embed(source, source_vocab_size, "encoder")
    x = ApplyPaddingMask(name="encoder_mask_embedding")(x, padding_mask=source_mask)
    for i in range(num_layers):
        x = block(x, "encoder", i, "same")
        x = ApplyPaddingMask(name=f"encoder_mask_{i}")(x, padding_mask=source_mask)

    y = embed(target, target_vocab_size, "decoder")
    for i in range(num_layers):
        y = block(y, "decoder", i, "causal")  # (batch, tgt_len, filters)

    if attention is not None:
        y = _attend(y, x, source_mask, attention, filters)
    else:
        pooled = keras.layers.GlobalAveragePooling1D(name="encoder_pool")(
            x, mask=source_mask
        )  # (batch, filters)
        pooled = keras.layers.Reshape((1, filters), name="encoder_pool_reshape")(pooled)
        y = keras.layers.Add(name="decoder_add_source")([y, pooled])  # broadcast over tgt_len
    logits = keras.layers.Dense(target_vocab_size, dtype="float32", name="logits")(y)
    return keras.Model({"source": source, "target": target}, logits, name=name)
