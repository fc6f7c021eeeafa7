"""Checkers of notebooks 06-07: the encoder-decoder wired with the Functional API (section 3.1
of the paper) and the masked cross-entropy it is trained with (section 5)."""

import inspect

import keras
import numpy as np

from keras_transformer import layers, models
from keras_transformer.course.checking import (
    as_array,
    close_on,
    fail,
    max_diff,
    run,
    shaped_output,
    student_facing,
)
from keras_transformer.course.diagnosis import FUNCTIONAL_MISTAKES, wired_logits
from keras_transformer.course.references import np_token_losses


def _sublayers_of(model):
    """Every layer of `model`, nested models flattened, in the order Keras lists them."""
    found = []
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            found += _sublayers_of(layer)
        else:
            found.append(layer)
    return found


_PADDING_HINT = (
    "derive the masks from the ids, source_mask = kt.layers.PaddingMask()(source), and pass "
    "them explicitly: padding_mask=source_mask to every encoder layer, "
    "context_padding_mask=source_mask (and padding_mask=target_mask) to every decoder layer"
)


def _calls_without(config, class_name, argument, position):
    """How many calls of `class_name` layers in a model config lack `argument` (keyword, or
    positional at index `position`); nested models included."""
    missing = 0
    for layer in config.get("layers", []):
        if layer.get("class_name") == class_name:
            for node in layer.get("inbound_nodes", []):
                given = argument in node.get("kwargs", {}) or len(node.get("args", [])) > position
                missing += not given
        elif isinstance(layer.get("config"), dict) and "layers" in layer["config"]:
            missing += _calls_without(layer["config"], class_name, argument, position)
    return missing


@student_facing
def check_functional_transformer(
    build, num_layers: int = 2, d_model: int = 16, num_heads: int = 2, dff: int = 32
) -> None:
    """Checks a student's encoder-decoder Transformer wired with the Functional API (section 3.1).

    Contract: `build(source_vocab_size, target_vocab_size, sizes)`, `sizes` a dict with
    `num_layers`, `d_model`, `num_heads`, `dff`, returns a `keras.Model` whose inputs are
    `{"source": (batch, src_len), "target": (batch, tgt_len)}` int ids (0 = padding) and
    whose output is the logits `(batch, tgt_len, target_vocab_size)`; it is built, as in
    notebook 06, from `kt.layers.PositionalEmbedding` (source and target),
    `num_layers` `kt.layers.EncoderLayer`s and `kt.layers.DecoderLayer`s and a final
    `keras.layers.Dense`, with padding masks derived from the ids and passed explicitly to
    every encoder layer (`padding_mask`) and decoder layer (`context_padding_mask`).
    Probes: every layer on the path to the output (a Functional model drops the others),
    the parameter count (that of `kt.models.build_transformer`), the output shape, the
    logits against the student's own layers wired as the paper does (every decoder layer
    reads the last encoder layer's output) and, when they differ, against the same layers
    wired with one known mistake; the logits of the real target positions unchanged when
    padding is appended to the source or the target; the masks passed explicitly.
    Mistakes named: no padding masks at all, none in the encoder, none in cross-attention,
    masks left to Keras's implicit propagation, encoder or decoder layers left off the
    path (not stacked, or the decoder reading the embedding or an earlier encoder layer),
    decoder layer i reading encoder layer i, a softmax on the output; any other model whose
    logits change with padding is told so.
    """
    sec = "(section 3.1 of the paper)"
    sizes = {"num_layers": num_layers, "d_model": d_model, "num_heads": num_heads, "dff": dff}
    source_vocab, target_vocab = 23, 29  # different: the embeddings tell themselves apart
    what = f"build({source_vocab}, {target_vocab}, {sizes})"
    model = run(what, build, source_vocab, target_vocab, dict(sizes))
    if not isinstance(model, keras.Model):
        fail(f"{what} returned {type(model).__name__}; return the keras.Model(inputs, logits)")
    rng = np.random.default_rng(7)
    source = np.array([[5, 17, 9, 3, 0, 0, 0], [8, 2, 14, 21, 12, 3, 6]], "int32")
    target = np.array([[2, 14, 20, 0, 0], [2, 7, 28, 11, 4]], "int32")
    real = target != 0

    def call(src, tgt):
        label = "model({'source': ids, 'target': ids})"
        out = run(label, model, {"source": src, "target": tgt}, training=False)
        want = (*tgt.shape, target_vocab)
        return shaped_output(label, out, want, sec, "(batch, tgt_len, target_vocab_size) = ")

    call(source, target)
    found = _sublayers_of(model)
    embeddings = {
        layer.vocab_size: layer for layer in found if isinstance(layer, layers.PositionalEmbedding)
    }
    encoders = [layer for layer in found if isinstance(layer, layers.EncoderLayer)]
    decoders = [layer for layer in found if isinstance(layer, layers.DecoderLayer)]
    heads = [
        layer
        for layer in found
        if isinstance(layer, keras.layers.Dense) and layer.units == target_vocab
    ]
    kept = (
        "either the loop creates fewer than sizes['num_layers'] of them (range(sizes["
        "'num_layers'])), or some are created but left off the path: a Functional model keeps "
        "only the layers on a path from the inputs to the outputs"
    )
    if decoders and len(encoders) < num_layers:
        fail(
            f"only {len(encoders)} of the {num_layers} encoder layers are in the model: {kept}, "
            "so the output of the others never reaches the logits; create num_layers encoder "
            "layers, stack them (layer i + 1 reads layer i's output) and let every decoder "
            "layer read the last encoder layer's output (the encoder's output, not the "
            f"embedding) {sec}"
        )
    if encoders and len(decoders) < num_layers:
        fail(
            f"only {len(decoders)} of the {num_layers} decoder layers are in the model: {kept}; "
            "create num_layers decoder layers and stack them: decoder layer i + 1 reads decoder "
            f"layer i's output, and the Dense reads the last one's {sec}"
        )
    if len(encoders) > num_layers or len(decoders) > num_layers:
        fail(
            f"the model has {len(encoders)} encoder and {len(decoders)} decoder layers; "
            f"sizes['num_layers'] = {num_layers} asks for {num_layers} of each {sec}"
        )

    expected_count = models.build_transformer(source_vocab, target_vocab, **sizes).count_params()
    if model.count_params() != expected_count:
        fail(
            f"the model has {model.count_params():,} parameters; an encoder-decoder of these "
            f"sizes ({num_layers} encoder and {num_layers} decoder layers, two embeddings, the "
            f"output Dense) has {expected_count:,}: check the layers and their sizes {sec}"
        )
    # Random weights, larger than Keras's initial ones: the mistakes change the logits clearly.
    for variable in model.trainable_weights:
        shape, path = tuple(variable.shape), variable.path
        scale = 0.2 if path.endswith("gamma") else 0.1 if path.endswith(("beta", "bias")) else 0.4
        value = path.endswith("gamma") + scale * rng.standard_normal(shape)
        variable.assign(value.astype(variable.dtype))
    out = call(source, target)
    known = (
        {source_vocab, target_vocab} <= set(embeddings)
        and len(encoders) == len(decoders) == num_layers
        and len(heads) == 1
    )
    if known:
        parts = (embeddings[source_vocab], embeddings[target_vocab], encoders, decoders, heads[0])
        expected = wired_logits(parts, source, target)
        if not close_on(out, expected, real, loose=False):
            for variant, mistake in FUNCTIONAL_MISTAKES.items():
                if close_on(out, wired_logits(parts, source, target, variant), real, loose=False):
                    fail(f"{mistake} {sec}")
    # Padding: appended to the source or to the target, it leaves real positions unchanged.
    for name, src, tgt in (
        ("the source", np.pad(source, ((0, 0), (0, 3))), target),
        ("the target", source, np.pad(target, ((0, 0), (0, 2)))),
    ):
        padded = call(src, tgt)[:, : target.shape[1]]
        if not close_on(padded, out, real, loose=False):
            change = np.abs(padded[real] - out[real]).max()
            fail(
                f"padding appended to {name} changes the logits of the real target positions "
                f"(by up to {change:.3g}): the attention layers read padded positions; "
                f"{_PADDING_HINT} (section 3.2.3 of the paper)"
            )
    config = model.get_config()
    unmasked = {
        "encoder layer": _calls_without(config, "EncoderLayer", "padding_mask", 1),
        "decoder layer": _calls_without(config, "DecoderLayer", "context_padding_mask", 3),
    }
    if any(unmasked.values()):
        calls = " and ".join(f"{n} {kind} call(s)" for kind, n in unmasked.items() if n)
        fail(
            f"{calls} get no padding mask: the padding is handled only by Keras's implicit "
            "masks (mask_zero=True), which not every layer passes on (the design notes "
            "measured them lost after keras.layers.Add); "
            f"{_PADDING_HINT} (section 3.2.3 of the paper)"
        )
    if known and not close_on(out, expected, real, loose=False):
        fail(
            f"the logits differ from your layers wired as the paper does "
            f"({max_diff(out[real], expected[real])}): source embedding, the encoder layers "
            "in a stack, each reading the previous one's output with padding_mask=source_mask; "
            "target embedding, the decoder layers in a stack, each reading the previous one's "
            "output and the last encoder layer's output, with context_padding_mask=source_mask; "
            f"the Dense to the target vocabulary, no softmax {sec}"
        )
    if not known:
        fail(
            f"{what}: build it from kt.layers.PositionalEmbedding (one for the source, vocab "
            f"{source_vocab}, one for the target, vocab {target_vocab}), {num_layers} "
            f"kt.layers.EncoderLayer and {num_layers} kt.layers.DecoderLayer, and one "
            f"keras.layers.Dense({target_vocab}), as notebook 06 does; found "
            f"{len(encoders)} encoder layers, {len(decoders)} decoder layers, embeddings of "
            f"vocabularies {sorted(embeddings)}, {len(heads)} Dense({target_vocab}) {sec}"
        )


@student_facing
def check_masked_loss(fn) -> None:
    """Checks a student's masked token cross-entropy (the training objective, section 5).

    Contract: `fn(labels, logits)`, int `labels` `(batch, seq_len)` (0 = padding),
    `logits` `(batch, seq_len, vocab_size)`, returns the scalar mean of
    `-log softmax(logits)[label]` over the tokens whose label is not 0, as
    `MaskedSparseCategoricalCrossentropy`. If `fn` takes `label_smoothing`, 0.1
    must give the loss of section 5.4: target `(1 - eps) * one_hot + eps / vocab_size`.
    Mistakes named: padding counted, dividing by all positions, a mean of
    per-sentence means, logits read as probabilities, a sum, padding logits counted;
    with `label_smoothing`: the argument ignored, eps / (vocab_size - 1) on the other
    words, the one-hot not scaled by (1 - eps), padding counted. The logits are fixed
    and confident (the label's logit stands out), so each of these moves the loss by
    percents.
    """
    sec = "(section 5 of the paper)"
    rng = np.random.default_rng(6)
    labels = np.array([[5, 3, 7, 2, 0, 0], [4, 1, 0, 0, 0, 0], [6, 6, 2, 8, 9, 1]], "int32")
    # A model that has learnt something: the label's logit stands out by 3 to 6, so the
    # smoothing term (the mean over the vocabulary) is far from the label's loss and every way
    # of smoothing wrongly moves the loss by percents, not by round-off.
    logits = (2.0 * rng.standard_normal((3, 6, 10))).astype("float32")
    boost = 3.0 + 3.0 * rng.random(labels.shape)
    np.put_along_axis(logits, labels[..., None], (logits.max(-1) + boost)[..., None], -1)
    logits = logits.astype("float32")
    what = "fn(labels, logits)"

    def call(y, z, **kwargs):
        value = as_array(run(what, fn, y, z, **kwargs), what)
        if value.size != 1:
            fail(
                f"{what} returned shape {value.shape}; expected a scalar (the mean over real tokens) {sec}"
            )
        return float(value.reshape(()))

    loss = call(labels, logits)
    token = np_token_losses(labels, logits.astype("float64"))
    real = labels != 0
    mean = token[real].mean()
    if not np.isclose(loss, mean, rtol=1e-3, atol=1e-4):
        probs = np.clip(logits / logits.sum(-1, keepdims=True), 1e-7, 1 - 1e-7)
        for candidate, mistake in (
            (token.mean(), "padding counted: average only over the tokens whose label is not 0"),
            (
                token[real].sum() / labels.size,
                "divided by all positions; divide by the number of real tokens",
            ),
            (
                np.mean([token[i][real[i]].mean() for i in range(3)]),
                "a mean of per-sentence means; average over all real tokens of the batch",
            ),
            (token[real].sum(), "a sum, not a mean over the real tokens"),
            (
                -np.log(np.take_along_axis(probs, labels[..., None], -1)[..., 0])[real].mean(),
                "logits read as probabilities: apply the softmax (from_logits=True)",
            ),
        ):
            if np.isclose(loss, candidate, rtol=1e-3, atol=1e-4):
                fail(f"{what}: {mistake} {sec}")
        fail(f"{what} = {loss:.5f}; the mean cross-entropy over real tokens is {mean:.5f} {sec}")
    junk = logits.copy()
    junk[~real] = rng.standard_normal(junk[~real].shape) * 10
    if not np.isclose(call(labels, junk), loss, rtol=1e-4, atol=1e-5):
        fail(f"the logits at padded positions change the loss; they must not count {sec}")
    try:
        takes_smoothing = "label_smoothing" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes_smoothing = False
    if takes_smoothing:
        eps, vocab = 0.1, logits.shape[-1]
        smoothed = call(labels, logits, label_smoothing=eps)
        want = np_token_losses(labels, logits.astype("float64"), eps)[real].mean()
        if not np.isclose(smoothed, want, rtol=1e-3, atol=1e-4):
            log_p = logits - logits.max(-1, keepdims=True)
            log_p = log_p - np.log(np.exp(log_p).sum(-1, keepdims=True))  # (batch, len, vocab)
            nll, spread = token, -log_p.mean(-1)  # the label's loss, the mean over the vocabulary
            others = (spread * vocab - nll) / (vocab - 1)  # the mean over the other words
            said = f"fn(labels, logits, label_smoothing={eps}) = {smoothed:.5f}"
            right = (
                "the target is (1 - eps) * one_hot + eps / vocab_size, so a token's loss is "
                "(1 - eps) * (-log p[label]) + eps * mean over the vocabulary of (-log p[v])"
            )
            for candidate, mistake in (
                (
                    mean,
                    "label_smoothing is ignored: it returns the loss without smoothing; with "
                    f"label_smoothing={eps} {right}",
                ),
                (
                    ((1 - eps) * nll + eps * others)[real].mean(),
                    "the smoothing mass is spread as eps / (vocab_size - 1) over the other words "
                    "only (the label keeps exactly 1 - eps); the paper's (and Keras's) target "
                    f"spreads eps / vocab_size over every word, the label included: {right}",
                ),
                (
                    (nll + eps * spread)[real].mean(),
                    "the one-hot is not scaled by (1 - eps): the target one_hot + eps / "
                    f"vocab_size sums to 1 + eps; {right}",
                ),
                (
                    ((1 - eps) * nll + eps * spread).mean(),
                    f"with label smoothing the padding is counted; average over the real tokens "
                    f"only: {right}",
                ),
            ):
                if np.isclose(smoothed, candidate, rtol=1e-3, atol=1e-4):
                    fail(f"{said}: {mistake} (section 5.4 of the paper)")
            fail(f"{said}; expected {want:.5f}: {right} (section 5.4 of the paper)")
