"""The keras-io recipe: "English-to-Spanish translation with a sequence-to-sequence Transformer".

A faithful reimplementation, for `benchmarks/real_corpora.py`, of the keras-io
example by fchollet (keras.io/examples/nlp/neural_machine_translation_with_transformer/,
its Keras 3 version), run on the benchmark's split of a corpus instead of the
example's own 70/15/15 shuffle of `spa.txt`:

- **data**: the target side becomes `"[start] " + target + " [end]"`; two
  `keras.layers.TextVectorization` layers adapted on the training pairs, 15,000
  words each, 20 tokens per source sentence and 21 per target sentence. The
  source side uses the default standardization (lower-case, strip punctuation);
  the target side lower-cases and strips `string.punctuation` and `"¿"` except
  `"["` and `"]"`. `format_dataset` feeds `{"encoder_inputs", "decoder_inputs"}`
  (the target without its last token) and predicts the target shifted by one;
  `make_dataset` batches by 64, maps, then `cache().shuffle(2048).prefetch(16)`.
- **model**: `PositionalEmbedding` (a token `Embedding` plus a learned position
  `Embedding`, mask `inputs != 0`), one `TransformerEncoder` and one
  `TransformerDecoder` (`MultiHeadAttention(num_heads=8, key_dim=256)`,
  `Dense(2048, relu) -> Dense(256)`, post-norm `LayerNormalization`s, the
  example's padding and causal masks), `Dropout(0.5)`, `Dense(15000, softmax)`;
  embed_dim 256, latent_dim 2048, 8 heads (19.96M parameters).
- **training**: `compile("rmsprop", loss=SparseCategoricalCrossentropy(ignore_class=0),
  metrics=["accuracy"])`, `fit` with the validation data for the example's 30
  epochs, stopped by `TimeBudget` at the end of the batch where the wall-clock
  budget runs out (as the tutorial's recipe). The weights are those of the last
  step, as in the example.
- **decoding**: the example's `decode_sequence` (greedy, at most 20 tokens from
  `"[start]"` until `"[end]"`, re-vectorising the decoded text at every step),
  run on batches of sentences: each row is computed as the example computes it
  alone (`decode_one` is the example's loop, one sentence at a time, to check
  this). The output drops `"[start]"` and `"[end]"`; it is lower-case and
  without most punctuation by the example's design, and keeps `[UNK]`.

Where this departs from the example's code, with the same results: the causal
mask is broadcast to the batch (`ops.tile` with a tensor of repeats fails in a
Keras 3.15 graph); the decoding loop runs the model in a `tf.function` on a
batch; an output id past a vocabulary smaller than 15,000 words reads `[UNK]`
(the example would raise a `KeyError`). The split is the benchmark's, shared by
every recipe, not the example's 70/15/15 shuffle.
"""

from __future__ import annotations

import json
import re
import string

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops

VOCAB_SIZE = 15000
SEQUENCE_LENGTH = 20
BATCH_SIZE = 64
EMBED_DIM = 256
LATENT_DIM = 2048
NUM_HEADS = 8
EPOCHS = 30
MAX_DECODED_SENTENCE_LENGTH = 20

STRIP_CHARS = (string.punctuation + "¿").replace("[", "").replace("]", "")


def custom_standardization(input_string):
    """The example's Spanish standardization: lower-case, strip punctuation and "¿" but not "[]"."""
    lowercase = tf.strings.lower(input_string)
    return tf.strings.regex_replace(lowercase, f"[{re.escape(STRIP_CHARS)}]", "")


class TransformerEncoder(layers.Layer):
    """The example's encoder layer: self-attention and a feed-forward block, post-norm."""

    def __init__(self, embed_dim, dense_dim, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.embed_dim = embed_dim
        self.dense_dim = dense_dim
        self.num_heads = num_heads
        self.attention = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.dense_proj = keras.Sequential(
            [layers.Dense(dense_dim, activation="relu"), layers.Dense(embed_dim)]
        )
        self.layernorm_1 = layers.LayerNormalization()
        self.layernorm_2 = layers.LayerNormalization()
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is not None:
            padding_mask = ops.cast(mask[:, None, :], dtype="int32")
        else:
            padding_mask = None
        attention_output = self.attention(
            query=inputs, value=inputs, key=inputs, attention_mask=padding_mask
        )
        proj_input = self.layernorm_1(inputs + attention_output)
        proj_output = self.dense_proj(proj_input)
        return self.layernorm_2(proj_input + proj_output)

    def get_config(self):
        config = super().get_config()
        config.update(
            {"embed_dim": self.embed_dim, "dense_dim": self.dense_dim, "num_heads": self.num_heads}
        )
        return config


class PositionalEmbedding(layers.Layer):
    """The example's embedding: token embedding plus a learned position embedding; mask ids != 0."""

    def __init__(self, sequence_length, vocab_size, embed_dim, **kwargs):
        super().__init__(**kwargs)
        self.token_embeddings = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.position_embeddings = layers.Embedding(input_dim=sequence_length, output_dim=embed_dim)
        self.sequence_length = sequence_length
        self.vocab_size = vocab_size
        self.embed_dim = embed_dim

    def call(self, inputs):
        length = ops.shape(inputs)[-1]
        positions = ops.arange(0, length, 1)
        embedded_tokens = self.token_embeddings(inputs)
        embedded_positions = self.position_embeddings(positions)
        return embedded_tokens + embedded_positions

    def compute_mask(self, inputs, mask=None):
        return ops.not_equal(inputs, 0)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sequence_length": self.sequence_length,
                "vocab_size": self.vocab_size,
                "embed_dim": self.embed_dim,
            }
        )
        return config


class TransformerDecoder(layers.Layer):
    """The example's decoder layer: causal self-attention, cross-attention, feed-forward."""

    def __init__(self, embed_dim, latent_dim, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.embed_dim = embed_dim
        self.latent_dim = latent_dim
        self.num_heads = num_heads
        self.attention_1 = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.attention_2 = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.dense_proj = keras.Sequential(
            [layers.Dense(latent_dim, activation="relu"), layers.Dense(embed_dim)]
        )
        self.layernorm_1 = layers.LayerNormalization()
        self.layernorm_2 = layers.LayerNormalization()
        self.layernorm_3 = layers.LayerNormalization()
        self.supports_masking = True

    def call(self, inputs, mask=None):
        inputs, encoder_outputs = inputs
        causal_mask = self.get_causal_attention_mask(inputs)
        if mask is None:
            inputs_padding_mask, encoder_outputs_padding_mask = None, None
        else:
            inputs_padding_mask, encoder_outputs_padding_mask = mask
        attention_output_1 = self.attention_1(
            query=inputs,
            value=inputs,
            key=inputs,
            attention_mask=causal_mask,
            query_mask=inputs_padding_mask,
        )
        out_1 = self.layernorm_1(inputs + attention_output_1)
        attention_output_2 = self.attention_2(
            query=out_1,
            value=encoder_outputs,
            key=encoder_outputs,
            query_mask=inputs_padding_mask,
            key_mask=encoder_outputs_padding_mask,
        )
        out_2 = self.layernorm_2(out_1 + attention_output_2)
        proj_output = self.dense_proj(out_2)
        return self.layernorm_3(out_2 + proj_output)

    def get_causal_attention_mask(self, inputs):
        input_shape = ops.shape(inputs)
        batch_size, sequence_length = input_shape[0], input_shape[1]
        i = ops.arange(sequence_length)[:, None]
        j = ops.arange(sequence_length)
        mask = ops.cast(i >= j, dtype="int32")
        mask = ops.reshape(mask, (1, input_shape[1], input_shape[1]))
        # The example tiles by `concatenate([batch_size], [1, 1])`; `ops.tile` on Keras 3.15
        # cannot take a tensor of repeats in a graph, so broadcast (the same values).
        return ops.broadcast_to(mask, (batch_size, sequence_length, sequence_length))

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "embed_dim": self.embed_dim,
                "latent_dim": self.latent_dim,
                "num_heads": self.num_heads,
            }
        )
        return config


def build_kerasio_model(
    *,
    vocab_size: int = VOCAB_SIZE,
    sequence_length: int = SEQUENCE_LENGTH,
    embed_dim: int = EMBED_DIM,
    latent_dim: int = LATENT_DIM,
    num_heads: int = NUM_HEADS,
) -> keras.Model:
    """The example's end-to-end `transformer` (its defaults; smaller sizes only for tests)."""
    encoder_inputs = keras.Input(shape=(None,), dtype="int64", name="encoder_inputs")
    x = PositionalEmbedding(sequence_length, vocab_size, embed_dim)(encoder_inputs)
    encoder_outputs = TransformerEncoder(embed_dim, latent_dim, num_heads)(x)
    decoder_inputs = keras.Input(shape=(None,), dtype="int64", name="decoder_inputs")
    x = PositionalEmbedding(sequence_length, vocab_size, embed_dim)(decoder_inputs)
    x = TransformerDecoder(embed_dim, latent_dim, num_heads)([x, encoder_outputs])
    x = layers.Dropout(0.5)(x)
    decoder_outputs = layers.Dense(vocab_size, activation="softmax")(x)
    return keras.Model(
        {"encoder_inputs": encoder_inputs, "decoder_inputs": decoder_inputs},
        decoder_outputs,
        name="transformer",
    )


def vectorizers(train_pairs, *, vocab_size=VOCAB_SIZE, sequence_length=SEQUENCE_LENGTH):
    """The example's two `TextVectorization` layers, adapted on the training pairs.

    `train_pairs` holds (source, target) with the target already framed by
    `"[start] "` and `" [end]"`.
    """
    eng_vectorization = layers.TextVectorization(
        max_tokens=vocab_size, output_mode="int", output_sequence_length=sequence_length
    )
    spa_vectorization = layers.TextVectorization(
        max_tokens=vocab_size,
        output_mode="int",
        output_sequence_length=sequence_length + 1,
        standardize=custom_standardization,
    )
    eng_vectorization.adapt([pair[0] for pair in train_pairs])
    spa_vectorization.adapt([pair[1] for pair in train_pairs])
    return eng_vectorization, spa_vectorization


def frame(pairs):
    """`(eng, spa)` -> `(eng, "[start] " + spa + " [end]")`, as the example parses `spa.txt`."""
    return [(eng, "[start] " + spa + " [end]") for eng, spa in pairs]


def make_dataset(pairs, eng_vectorization, spa_vectorization, *, batch_size=BATCH_SIZE):
    """The example's `make_dataset` and `format_dataset` (pairs already framed)."""

    def format_dataset(eng, spa):
        eng = eng_vectorization(eng)
        spa = spa_vectorization(spa)
        return ({"encoder_inputs": eng, "decoder_inputs": spa[:, :-1]}, spa[:, 1:])

    eng_texts, spa_texts = zip(*pairs, strict=True)
    dataset = tf.data.Dataset.from_tensor_slices((list(eng_texts), list(spa_texts)))
    dataset = dataset.batch(batch_size)
    dataset = dataset.map(format_dataset)
    return dataset.cache().shuffle(2048).prefetch(16)


class _FirstBatchLoss(keras.callbacks.Callback):
    """Keeps the loss of the first batch, to compare with the epochs' mean losses."""

    def __init__(self):
        super().__init__()
        self.loss = None

    def on_train_batch_end(self, batch, logs=None):
        if self.loss is None and logs and "loss" in logs:
            self.loss = float(logs["loss"])


def train_kerasio(train, dev, budget, *, seed, log, epochs=EPOCHS, model_sizes=None):
    """Trains the example's recipe on `train` (validating on `dev`) for at most `budget` seconds.

    Returns `(bundle, info)`: the bundle for `kerasio_translate`, and the run's
    wall_seconds, steps, epochs, first batch's loss, mean loss per epoch (and
    validation loss), parameters and vocabulary sizes.
    `model_sizes` (a dict of `build_kerasio_model` arguments) is for tests only.
    """
    from keras_transformer.training.callbacks import TimeBudget

    keras.utils.set_random_seed(seed)
    sizes = {"vocab_size": VOCAB_SIZE, "sequence_length": SEQUENCE_LENGTH, **(model_sizes or {})}
    train_pairs, val_pairs = frame(train), frame(dev)
    eng_vectorization, spa_vectorization = vectorizers(
        train_pairs, vocab_size=sizes["vocab_size"], sequence_length=sizes["sequence_length"]
    )
    train_ds = make_dataset(train_pairs, eng_vectorization, spa_vectorization)
    val_ds = make_dataset(val_pairs, eng_vectorization, spa_vectorization)
    transformer = build_kerasio_model(**sizes)
    transformer.compile(
        "rmsprop",
        loss=keras.losses.SparseCategoricalCrossentropy(ignore_class=0),
        metrics=["accuracy"],
    )
    budget_cb = TimeBudget(budget)  # wall clock, as the other recipes; stops mid-epoch
    first = _FirstBatchLoss()
    history = transformer.fit(
        train_ds, epochs=epochs, validation_data=val_ds, callbacks=[budget_cb, first], verbose=0
    )
    info = {
        "wall_seconds": round(budget_cb.elapsed, 1),
        "steps": int(ops.convert_to_numpy(transformer.optimizer.iterations)),
        "epochs": len(history.history["loss"]),
        "stopped_by_time_budget": budget_cb.stopped,
        "first_batch_loss": None if first.loss is None else round(first.loss, 3),
        "loss": [round(float(v), 3) for v in history.history["loss"]],
        "val_loss": [round(float(v), 3) for v in history.history.get("val_loss", [])],
        "parameters": transformer.count_params(),
        "vocab_size": [eng_vectorization.vocabulary_size(), spa_vectorization.vocabulary_size()],
    }
    log(f"  kerasio: {json.dumps(info)}")
    return (transformer, eng_vectorization, spa_vectorization), info


def _token(vocabulary: list[str], index: int) -> str:
    """The word of `index`; `"[UNK]"` past the vocabulary.

    The model always has 15,000 outputs; a corpus with fewer distinct words
    leaves the last ones without a word, where the example's lookup would raise
    a `KeyError` if the model ever chose them.
    """
    return vocabulary[index] if index < len(vocabulary) else "[UNK]"


def _clean(decoded_sentence: str) -> str:
    """`"[start] ella come [end]"` -> `"ella come"` (whitespace of empty tokens collapsed)."""
    tokens = decoded_sentence.split()
    if tokens and tokens[0] == "[start]":
        tokens = tokens[1:]
    if tokens and tokens[-1] == "[end]":
        tokens = tokens[:-1]
    return " ".join(tokens)


def decode_one(bundle, input_sentence, *, max_decoded_sentence_length=MAX_DECODED_SENTENCE_LENGTH):
    """The example's `decode_sequence`, one sentence, unchanged (returns "[start] ... [end]")."""
    transformer, eng_vectorization, spa_vectorization = bundle
    spa_vocab = spa_vectorization.get_vocabulary()
    spa_index_lookup = dict(zip(range(len(spa_vocab)), spa_vocab, strict=True))
    tokenized_input_sentence = eng_vectorization([input_sentence])
    decoded_sentence = "[start]"
    for i in range(max_decoded_sentence_length):
        tokenized_target_sentence = spa_vectorization([decoded_sentence])[:, :-1]
        predictions = transformer(
            {
                "encoder_inputs": tokenized_input_sentence,
                "decoder_inputs": tokenized_target_sentence,
            }
        )
        sampled_token_index = ops.convert_to_numpy(ops.argmax(predictions[0, i, :])).item(0)
        sampled_token = spa_index_lookup.get(sampled_token_index, "[UNK]")  # see `_token`
        decoded_sentence += " " + sampled_token
        if sampled_token == "[end]":
            break
    return decoded_sentence


def kerasio_translate(
    bundle, texts, *, batch_size=BATCH_SIZE, max_decoded_sentence_length=MAX_DECODED_SENTENCE_LENGTH
):
    """`decode_one` on batches: each row's steps are those of the example's loop for that row.

    Every row keeps its own decoded text, re-vectorised at every step as the
    example does, and stops growing at `"[end]"`; the batch stops when all rows
    have. Returns the texts without `"[start]"`/`"[end]"`.
    """
    transformer, eng_vectorization, spa_vectorization = bundle
    spa_vocab = spa_vectorization.get_vocabulary()

    @tf.function(reduce_retracing=True)
    def predict(source, target):
        return transformer({"encoder_inputs": source, "decoder_inputs": target}, training=False)

    outputs = []
    for start in range(0, len(texts), batch_size):
        chunk = list(texts[start : start + batch_size])
        tokenized_input = eng_vectorization(tf.constant(chunk))
        decoded = ["[start]"] * len(chunk)
        done = np.zeros(len(chunk), dtype=bool)
        for i in range(max_decoded_sentence_length):
            tokenized_target = spa_vectorization(tf.constant(decoded))[:, :-1]
            predictions = predict(tokenized_input, tokenized_target)
            sampled = np.argmax(ops.convert_to_numpy(predictions[:, i, :]), axis=-1)
            for row, index in enumerate(sampled):
                if not done[row]:
                    token = _token(spa_vocab, int(index))
                    decoded[row] += " " + token
                    done[row] = token == "[end]"
            if done.all():
                break
        outputs.extend(_clean(text) for text in decoded)
    return outputs
