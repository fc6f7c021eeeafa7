"""RNN and CNN seq2seq baselines with `build_transformer`'s inputs, logits and explicit masks."""

import keras

from keras_transformer._validation import check_positive_int, check_rate
from keras_transformer.errors import UserInputError
from keras_transformer.layers import ApplyPaddingMask, PaddingMask, PositionalEmbedding
from keras_transformer.models._stacks import token_input

_CELLS = {"lstm": keras.layers.LSTM, "gru": keras.layers.GRU}


def _check_args(attention, args: dict, names) -> None:
    if attention not in ("luong", "bahdanau", None):
        raise UserInputError(
            f"attention={attention!r} is not supported; use 'luong' "
            "(keras.layers.Attention, dot-product score), 'bahdanau' "
            "(keras.layers.AdditiveAttention) or None (no attention)."
        )
    for name in ("source_vocab_size", "target_vocab_size", *names):
        check_positive_int(name, args[name])


def _attend(decoded, encoded, source_mask, attention: str, units: int, scaled: bool = False):
    """Attention over the encoder outputs, then Luong's attentional state `tanh(W [h_t; c_t])`.

    `scaled`: divide the dot-product scores by `sqrt(units)` (as the Transformer does), for
    states of norm ~`sqrt(units)` such as LayerNorm outputs; unscaled, their scores have a
    standard deviation of ~`sqrt(units)` at initialization and the softmax starts saturated.
    """
    if attention == "luong":
        if scaled:  # (q / sqrt(units)) . k == (q . k) / sqrt(units)
            decoded = keras.layers.Rescaling(units**-0.5, name="attention_query_scale")(decoded)
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

    The encoder's final states start the decoder (teacher forcing): without
    attention the source reaches it only through them (Table 1's O(T) path);
    attention (Luong's dot-product or Bahdanau's additive scores) follows the decoder RNN.
    Masking: the source mask goes to the encoder RNNs and the attention; the decoder is causal.

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (0 is padding).
        cell: `"lstm"` or `"gru"`.
        units, num_layers: hidden size and number of recurrent layers per stack.
        attention: `"luong"`, `"bahdanau"` or `None` (the plain encoder-decoder).
        embedding_dim: token embedding size; default `units`.
        dropout: dropout on the embeddings and between stacked layers.
        name: model name.

    Returns:
        A model from `{"source", "target"}` ids to float32 logits `(batch, tgt_len, vocab)`.

    Example:
    >>> import numpy as np
    >>> model = build_rnn_seq2seq(30, 40, cell="gru", units=16, attention="bahdanau")
    >>> logits = model({"source": np.array([[5, 6, 7, 0]]), "target": np.array([[2, 8, 9]])})
    >>> tuple(logits.shape), keras.backend.standardize_dtype(logits.dtype)
    ((1, 3, 40), 'float32')

    Reference:
        Sutskever et al., 2014; Bahdanau et al., 2015; Luong et al., 2015.
    """
    if cell not in _CELLS:
        raise UserInputError(f"cell={cell!r} is not supported; use 'lstm' or 'gru'.")
    embedding_dim = units if embedding_dim is None else embedding_dim
    _check_args(attention, locals(), ("units", "num_layers", "embedding_dim"))
    check_rate("dropout", dropout)
    rnn_class = _CELLS[cell]
    source, target = token_input("source"), token_input("target")
    source_mask = PaddingMask(name="encoder_padding_mask")(source)  # (batch, src_len)
    x = keras.layers.Embedding(source_vocab_size, embedding_dim, name="encoder_embedding")(source)
    x = keras.layers.Dropout(dropout, name="encoder_embedding_dropout")(x)
    final_states = []
    for i in range(num_layers):
        x = keras.layers.Dropout(dropout, name=f"encoder_dropout_{i}")(x) if i else x
        rnn = rnn_class(units, return_sequences=True, return_state=True, name=f"encoder_rnn_{i}")
        x, *states = rnn(x, mask=source_mask)  # (batch, src_len, units)
        final_states.append(states)
    y = keras.layers.Embedding(target_vocab_size, embedding_dim, name="decoder_embedding")(target)
    y = keras.layers.Dropout(dropout, name="decoder_embedding_dropout")(y)
    for i in range(num_layers):
        y = keras.layers.Dropout(dropout, name=f"decoder_dropout_{i}")(y) if i else y
        rnn = rnn_class(units, return_sequences=True, name=f"decoder_rnn_{i}")
        y = rnn(y, initial_state=final_states[i])  # (batch, tgt_len, units)
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

    Blocks `LayerNorm(x + Conv1D(x))` over sinusoid embeddings (causal convolutions
    in the decoder), then attention over the encoder, as in ConvS2S. An encoder stack sees
    `1 + num_layers * (kernel_size - 1)` neighbours, centred ("same" padding: half of them
    on each side); a decoder stack as many, all on the left (causal): the O(T/k) path of a
    CNN. Luong's dot-product scores are divided by `sqrt(filters)`: the blocks end in a
    LayerNorm, whose outputs have norm ~`sqrt(filters)`, and unscaled scores saturate the
    softmax at initialization (measured at `filters=32`: 0.97 of the weight on one source
    position; training then often stayed at chance).
    Masking: `ApplyPaddingMask` zeroes padded sources after every encoder block.

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (0 is padding).
        filters, kernel_size: channels (also of the embeddings) and width of every convolution.
        num_layers: convolution blocks in the encoder and in the decoder.
        attention: `"luong"`, `"bahdanau"` or `None` (add the masked mean of the encoder).
        dropout: dropout on the embeddings and on every block's output.
        max_length: longest sequence the position table covers.
        name: model name.

    Returns:
        A model from `{"source", "target"}` ids to float32 logits `(batch, tgt_len, vocab)`.

    Example:
    >>> import numpy as np
    >>> model = build_cnn_seq2seq(30, 40, filters=16, kernel_size=3, num_layers=2)
    >>> logits = model({"source": np.array([[5, 6, 7, 0]]), "target": np.array([[2, 8, 9]])})
    >>> tuple(logits.shape), keras.backend.standardize_dtype(logits.dtype)
    ((1, 3, 40), 'float32')

    Reference:
        Gehring et al., "Convolutional Sequence to Sequence Learning", 2017.
    """
    _check_args(attention, locals(), ("filters", "kernel_size", "num_layers", "max_length"))
    check_rate("dropout", dropout)
    source, target = token_input("source"), token_input("target")
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
        y = _attend(y, x, source_mask, attention, filters, scaled=True)
    else:
        pooled = keras.layers.GlobalAveragePooling1D(name="encoder_pool")(x, mask=source_mask)
        pooled = keras.layers.Reshape((1, filters), name="encoder_pool_reshape")(pooled)
        y = keras.layers.Add(name="decoder_add_source")([y, pooled])  # broadcast over tgt_len
    logits = keras.layers.Dense(target_vocab_size, dtype="float32", name="logits")(y)
    return keras.Model({"source": source, "target": target}, logits, name=name)
