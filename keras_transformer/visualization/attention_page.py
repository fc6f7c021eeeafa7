"""An attention explorer: one self-contained HTML page of a trained model's attention weights.

`write_attention_page(run_dir, text, path)` translates `text` with the run's model and writes a
page on which a student picks the kind of attention (encoder self, decoder self, cross), the
layer and the head, and sees the weights between the tokens as a grid. A row of the decoder's
attention is labelled with the token predicted there (the decoder position that reads `[START]`
predicts the first word). Hovering works both ways and writes each weight beside its token:
over a translation token it shows the source tokens read, over a source token the translation
tokens that read it; in self-attention a token's weight on itself shows too. The page loads
nothing from the network (inline script and style, system fonts). It opens on the last layer's
cross-attention (an encoder's on its last layer's self-attention); the URL can choose another
state: `page.html#kind=cross&layer=0&head=1`.

The model can be a run directory (a translation run of `train`, an encoder run of `train
--architecture encoder`, or a `pretrain` run), a `Translator` (a model trained in a notebook), or
an encoder model with its tokenizer; an encoder has "encoder self" attention only.
`inline_frame(page)` wraps a page in an `<iframe srcdoc=...>` for a notebook's output.

The weights come from a probe: the same builder with `return_attention_scores=True`, given the
trained model's weights (as `attention_maps` does for the plots).
"""

from __future__ import annotations

import html
import json
import os
import pathlib

import numpy as np

from keras_transformer._validation import check_positive_int
from keras_transformer.errors import UserInputError

KINDS = ("encoder self", "decoder self", "cross")


def attention_data(
    source_tokens: list[str],
    target_tokens: list[str],
    weights: dict[str, list[np.ndarray]],
    output_tokens: list[str] | None = None,
) -> dict:
    """The page's data: tokens and, per kind, one `(num_heads, q_len, kv_len)` array per layer.

    A decoder position reads its input token (`[START]`, then the tokens already generated) and
    predicts the next token: row `i` of "decoder self" and "cross" is the position that predicts
    `output_tokens[i]`, and the page labels it so (labelling it with the input token would put
    every row one token early). The columns of "decoder self" are the decoder's input tokens.

    Args:
        source_tokens: the source pieces (the encoder's positions).
        target_tokens: the decoder's input pieces (`[START]` and the translation but its last
            token).
        weights: `{"encoder self": [layer_0, ...], "decoder self": [...], "cross": [...]}`, any
            subset (an encoder-only model has "encoder self" only).
        output_tokens: the pieces the decoder predicts, one per target position (the
            translation and `[END]`); needed with "decoder self" or "cross".

    Returns:
        A JSON-ready dict.

    Example:
    >>> data = attention_data(["a", "b"], [], {"encoder self": [np.full((2, 2, 2), 0.5)]})
    >>> data["kinds"]["encoder self"]["queries"], len(data["kinds"]["encoder self"]["layers"])
    ('source', 1)
    >>> data = attention_data(["a"], ["[START]", "x"], {"cross": [np.ones((1, 2, 1))]},
    ...                       output_tokens=["x", "[END]"])
    >>> data["kinds"]["cross"]["queries"], data["output"]
    ('output', ['x', '[END]'])
    """
    unknown = sorted(set(weights) - set(KINDS))
    if unknown or not weights:
        raise ValueError(
            f"weights must map some of {list(KINDS)} to per-layer arrays; "
            f"received keys {sorted(weights)}"
        )
    decoding = sorted(set(weights) & {"decoder self", "cross"})
    output_tokens = list(output_tokens or [])
    if decoding and len(output_tokens) != len(target_tokens):
        raise ValueError(
            f"{', '.join(decoding)} attention needs output_tokens, the token predicted at each "
            f"of the {len(target_tokens)} decoder positions; received "
            f"{len(output_tokens)} output tokens"
        )
    sides = {
        "encoder self": ("source", "source"),
        "decoder self": ("output", "target"),
        "cross": ("output", "source"),
    }
    lengths = {
        "source": len(source_tokens),
        "target": len(target_tokens),
        "output": len(output_tokens),
    }
    kinds = {}
    for kind in KINDS:
        if kind not in weights:
            continue
        queries, keys = sides[kind]
        layers = []
        for index, layer in enumerate(weights[kind]):
            layer = np.asarray(layer, dtype="float32")
            expected = (lengths[queries], lengths[keys])
            if layer.ndim != 3 or layer.shape[1:] != expected:
                raise ValueError(
                    f"{kind} layer {index}: weights of shape {layer.shape}; expected "
                    f"(num_heads, {expected[0]}, {expected[1]}) for {lengths[queries]} "
                    f"{queries} and {lengths[keys]} {keys} tokens"
                )
            layers.append(np.round(layer, 4).tolist())
        kinds[kind] = {"queries": queries, "keys": keys, "layers": layers}
    return {
        "source": list(source_tokens),
        "target": list(target_tokens),
        "output": output_tokens,
        "kinds": kinds,
    }


_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: .8em; color: #222; }
h1 { font-size: 1.15em; margin: 0 0 .5em; overflow-wrap: anywhere; }
.controls label { margin-right: 1em; white-space: nowrap; }
#help { font-size: .9em; margin: .5em 0; }
.tokens { margin: .3em 0; }
.tokens b { display: inline-block; width: 7.5em; font-size: .85em; }
.tok { display: inline-block; padding: .15em .35em; margin: .15em .1em; border-radius: .3em;
       border: 1px solid #ccc; cursor: pointer; white-space: pre; }
.tok[data-weight]::after { content: " " attr(data-weight); font-size: .7em; }
.tok.selected { outline: 2px solid #d33; outline-offset: 1px; }
.scroll { overflow-x: auto; }
table.grid { border-collapse: collapse; margin-top: .6em; }
table.grid td { width: 2.2em; height: 1.6em; border: 1px solid #eee; text-align: center;
                font-size: .7em; }
table.grid th { font-weight: normal; font-size: .8em; padding: 0 .3em; white-space: pre;
                cursor: pointer; }
table.grid thead th { writing-mode: vertical-rl; text-align: left; }
table.grid th.selected, table.grid tr.selected th { color: #d33; font-weight: bold; }
table.grid td.selected, table.grid tr.selected td { outline: 1px solid #d33; }
"""

_SCRIPT = """
const DATA = JSON.parse(document.getElementById("attention-data").textContent);
const kindSel = document.getElementById("kind"), layerSel = document.getElementById("layer"),
      headSel = document.getElementById("head");
const HELP = {
  "encoder self": "Each row is a source token; it reads every source token, itself included. " +
    "Hover over a token or a row label to see what it reads; hover over a column label to see " +
    "which tokens read it.",
  "decoder self": "Row i is the decoder position that predicts translation token i; it reads the " +
    "decoder inputs up to its own position ([START] and the tokens already generated). Hover " +
    "over a translation token to see which inputs it read, or over a decoder input to see which " +
    "positions read it.",
  "cross": "Each row is the decoder position that predicts that translation token; the columns " +
    "are the source tokens. Hover over a translation token to see which source tokens it read, " +
    "or over a source token to see which translation tokens read it.",
};
const NAMES = {source: "source tokens", target: "decoder inputs",
               output: "translation tokens (each row labelled with the token it predicts)"};
let pinned = null;  // [role, index] of the last click
function option(sel, value, label) {
  const o = document.createElement("option"); o.value = value; o.textContent = label; sel.appendChild(o);
}
function fillNumbers(sel, count, name, preferred) {
  const keep = preferred !== undefined ? preferred : sel.value; sel.innerHTML = "";
  for (let i = 0; i < count; i++) option(sel, String(i), name + " " + i);
  if (keep !== "" && keep !== null && Number(keep) < count) sel.value = String(keep);
}
for (const kind of Object.keys(DATA.kinds)) option(kindSel, kind, kind);
function kindData() { return DATA.kinds[kindSel.value]; }
function current() { return kindData().layers[Number(layerSel.value)][Number(headSel.value)]; }
function token(side, i) { return document.querySelector(`.tok[data-side="${side}"][data-index="${i}"]`); }
function roleOf(side) {  // a token of a self-attention kind is first a query
  const kind = kindData();
  return side === kind.queries ? "query" : side === kind.keys ? "key" : null;
}
function tokenRow(side) {
  const row = document.getElementById(side + "-tokens"); if (!row) return;
  row.querySelectorAll(".tok").forEach(t => t.remove());
  DATA[side].forEach((text, i) => {
    const span = document.createElement("span"); span.className = "tok"; span.textContent = text;
    span.dataset.side = side; span.dataset.index = i;
    span.addEventListener("mouseenter", () => { const role = roleOf(side); if (role) highlight(role, i); });
    span.addEventListener("click", () => {
      const role = roleOf(side); if (role) { pinned = [role, i]; highlight(role, i); }
    });
    row.appendChild(span);
  });
}
function clear() {
  document.querySelectorAll(".tok").forEach(t => {
    t.style.background = ""; t.style.color = ""; t.classList.remove("selected"); delete t.dataset.weight;
  });
  document.querySelectorAll("#grid .selected").forEach(e => e.classList.remove("selected"));
  delete document.body.dataset.highlight;
  fit();
}
function paint(element, value) {
  element.style.background = `rgba(40, 90, 200, ${value})`;
  element.style.color = value > 0.5 ? "white" : "";
  element.dataset.weight = value.toFixed(2);
}
// role "query": what row `index` reads (its weights over the keys);
// role "key": who reads column `index` (the weights of every query on it).
function highlight(role, index) {
  const kind = kindData(), w = current();
  clear();
  if (role === "query") {
    w[index].forEach((value, k) => { const t = token(kind.keys, k); if (t) paint(t, value); });
    document.querySelectorAll(`#grid tr[data-query="${index}"]`).forEach(r => r.classList.add("selected"));
    token(kind.queries, index).classList.add("selected");
  } else {
    w.forEach((row, q) => { const t = token(kind.queries, q); if (t) paint(t, row[index]); });
    document.querySelectorAll(`#grid [data-key="${index}"]`).forEach(c => c.classList.add("selected"));
    token(kind.keys, index).classList.add("selected");
  }
  document.body.dataset.highlight = `${role}:${index}`;
  fit();  // the weights written beside the tokens can wrap a line
}
function fit() {  // inside an <iframe srcdoc>: grow (or shrink) the frame to the page
  try {
    const frame = window.frameElement;
    if (frame) frame.style.height = Math.ceil(document.documentElement.getBoundingClientRect().height + 8) + "px";
  } catch (error) {}
}
function draw() {
  const kind = kindData();
  fillNumbers(layerSel, kind.layers.length, "layer");
  fillNumbers(headSel, kind.layers[Number(layerSel.value)].length, "head");
  const w = current(), queries = DATA[kind.queries], keys = DATA[kind.keys];
  for (const side of ["source", "target", "output"]) {
    const row = document.getElementById(side + "-tokens");
    if (row) row.hidden = !DATA[side].length || (side !== kind.queries && side !== kind.keys);
  }
  document.getElementById("help").textContent = HELP[kindSel.value];
  const table = document.getElementById("grid"); table.innerHTML = "";
  const head = table.createTHead().insertRow(); head.appendChild(document.createElement("th"));
  keys.forEach((k, j) => {
    const th = document.createElement("th"); th.textContent = k; th.dataset.key = j;
    th.addEventListener("mouseenter", () => highlight("key", j)); head.appendChild(th);
  });
  const body = table.createTBody();
  queries.forEach((q, i) => {
    const tr = body.insertRow(); tr.dataset.query = i;
    const th = document.createElement("th"); th.textContent = q; tr.appendChild(th);
    th.addEventListener("mouseenter", () => highlight("query", i));
    w[i].forEach((value, k) => {
      const td = tr.insertCell(); td.dataset.key = k; td.style.background = `rgba(40, 90, 200, ${value})`;
      td.title = `${q} <- ${keys[k]}: ${value.toFixed(3)}`;
      td.textContent = value >= 0.1 ? value.toFixed(2) : "";
      td.style.color = value > 0.5 ? "white" : "#222";
    });
  });
  document.getElementById("caption").textContent =
    `${kindSel.value} attention, layer ${layerSel.value}, head ${headSel.value}: ` +
    `rows: the ${NAMES[kind.queries]}; columns: the ${NAMES[kind.keys]}; each row sums to 1.`;
  Object.assign(document.body.dataset, {kind: kindSel.value, layer: layerSel.value, head: headSel.value});
  document.body.dataset.weights = w.map(r => r.map(v => v.toFixed(3)).join(",")).join(";");
  if (pinned) highlight(...pinned); else clear();
  try {  // inside an <iframe srcdoc> (a notebook's output) the URL may not be writable
    history.replaceState(null, "", `#kind=${encodeURIComponent(kindSel.value)}&layer=${layerSel.value}&head=${headSel.value}`);
  } catch (error) {}
  fit();
}
function fromHash() {
  // Opens on cross-attention where there is one (what a translation's reader asks about),
  // in the last layer (the one the output is read from), head 0; the URL can say otherwise.
  const params = new URLSearchParams(location.hash.slice(1));
  const kind = params.get("kind");
  kindSel.value = kind && DATA.kinds[kind] ? kind : (DATA.kinds.cross ? "cross" : Object.keys(DATA.kinds)[0]);
  const layers = kindData().layers;
  const layer = params.get("layer") !== null && Number(params.get("layer")) < layers.length
    ? params.get("layer") : layers.length - 1;
  fillNumbers(layerSel, layers.length, "layer", layer);
  const heads = layers[Number(layerSel.value)].length;
  fillNumbers(headSel, heads, "head", params.get("head") !== null && Number(params.get("head")) < heads ? params.get("head") : 0);
}
for (const side of ["source", "target", "output"]) tokenRow(side);
kindSel.addEventListener("change", () => { pinned = null; draw(); });
layerSel.addEventListener("change", draw); headSel.addEventListener("change", draw);
window.addEventListener("resize", fit);
fromHash(); draw();
"""


def render_page(data: dict, title: str = "Attention") -> str:
    """The HTML page (a string) for `attention_data(...)`: inline style, script and data.

    The tokens are written into the page as text (readable without JavaScript); the script
    draws the grid of the chosen kind, layer and head. The page opens on the last layer's
    cross-attention when there is one. Hovering over a token highlights, with each weight
    written beside it, the tokens it reads (a query, the token itself included) or, for a
    token on the keys' side only, the tokens that read it; hovering over a column label of
    the grid does the latter in self-attention too. Inside an `<iframe srcdoc>` the page
    sizes its frame to its own height.

    Example:
    >>> page = render_page(attention_data(["a", "b"], [], {"encoder self": [np.eye(2)[None]]}))
    >>> "<script src" in page, '<span class="tok">a</span>' in page
    (False, True)
    """
    payload = json.dumps(data).replace("</", "<\\/")  # no "</script>" inside the data

    def row(side, label):
        tokens = data.get(side) or []
        hidden = "" if tokens else " hidden"
        spans = "".join(f'<span class="tok">{html.escape(t)}</span>' for t in tokens)
        return f'<div class="tokens" id="{side}-tokens"{hidden}><b>{label}</b>{spans}</div>'

    rows = [row("source", "source"), row("target", "decoder input"), row("output", "translation")]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{_STYLE}</style></head>
<body>
<h1>{html.escape(title)}</h1>
<div class="controls">
<label>kind <select id="kind"></select></label>
<label>layer <select id="layer"></select></label>
<label>head <select id="head"></select></label>
</div>
<p id="help">Hover over a token to highlight the tokens it attends to (darker: more weight).</p>
{"".join(rows)}
<p id="caption"></p>
<div class="scroll"><table class="grid" id="grid"></table></div>
<script type="application/json" id="attention-data">{payload}</script>
<script>{_SCRIPT}</script>
</body></html>
"""


def _tokens(ids, tokenizer) -> list[str]:
    return [t.decode() for t in tokenizer.lookup(np.array([list(ids)])).numpy()[0]]


def _model_sizes(model) -> tuple:
    """(TransformerConfig, share_embeddings) of a `build_transformer` model, read from its layers."""
    from keras_transformer.models.config import TransformerConfig

    names = {layer.name: layer for layer in model.layers}
    shared = "shared_embedding" in names
    embedding = names["shared_embedding" if shared else "encoder_embedding"].get_config()
    layer = names["encoder_layer_0"].get_config()
    sizes = {
        key: layer[key]
        for key in ("num_heads", "dff", "dropout", "attention_dropout", "norm_first", "activation")
    }
    sizes.update(
        num_layers=sum(1 for name in names if name.startswith("encoder_layer_")),
        d_model=embedding["d_model"],
        max_length=embedding["max_length"],
        learned_positions=embedding["learned_positions"],
    )
    return TransformerConfig(**sizes), shared


def _check_text(text) -> None:
    if not isinstance(text, str) or not text.strip():
        raise UserInputError(f"text must be a non-empty sentence; received text={text!r}")


def translation_attention(run_dir, text: str) -> dict:
    """Translates `text` with the run's model (greedy) and reads every layer's attention.

    Args:
        run_dir: the `--out` directory of `keras-transformer train` (an encoder-decoder run),
            or a `kt.inference.Translator` (e.g. of a model trained in a notebook).
        text: one source sentence.

    Returns:
        `attention_data(...)` with "encoder self", "decoder self" and "cross" for every layer
        and head, the decoder's input tokens as `"target"` and the tokens it predicted (the
        translation and `[END]`) as `"output"`, and `"translation"`: the translated text.
    """
    from keras_transformer import data, models
    from keras_transformer.inference import Translator

    _check_text(text)
    translator = run_dir if isinstance(run_dir, Translator) else Translator.from_run_dir(run_dir)
    if not isinstance(translator, Translator):
        raise UserInputError(
            f"{run_dir} holds a decoder-only model; the attention page needs an "
            f"encoder-decoder run of 'keras-transformer train'"
        )
    model, source_tok, target_tok = (
        translator.model,
        translator.source_tokenizer,
        translator.target_tokenizer,
    )
    config, shared = _model_sizes(model)
    probe = models.build_transformer(
        source_tok.vocab_size,
        target_tok.vocab_size,
        config=config,
        share_embeddings=shared,
        return_attention_scores=True,
    )
    probe.set_weights(model.get_weights())
    generated = [int(t) for t in translator.translate_tokens([text])[0] if t != 0]
    target_ids = np.array([[target_tok.start_id, *generated[:-1]]], "int32")
    source_ids = np.asarray(data.encode_source([text], source_tok, translator.max_length))
    source_ids = source_ids[:, : int(np.count_nonzero(source_ids))]
    scores = probe({"source": source_ids, "target": target_ids}, training=False)
    layers = range(config.num_layers)
    weights = {
        "encoder self": [scores[f"encoder_layer_{i}_self_attention"][0] for i in layers],
        "decoder self": [scores[f"decoder_layer_{i}_self_attention"][0] for i in layers],
        "cross": [scores[f"decoder_layer_{i}_cross_attention"][0] for i in layers],
    }
    found = attention_data(
        _tokens(source_ids[0], source_tok),
        _tokens(target_ids[0], target_tok),
        {kind: [np.asarray(w) for w in layer_weights] for kind, layer_weights in weights.items()},
        output_tokens=_tokens(generated, target_tok),  # row i predicts generated[i]
    )
    found["translation"] = translator([text])[0]
    return found


def encoder_attention(model, tokenizer, text: str) -> dict:
    """Every layer's self-attention of an encoder reading `text`.

    Args:
        model: a trained encoder-only model with `build_encoder`'s layer names
            (`build_encoder`, `build_classifier`, `build_masked_language_model`,
            `build_token_classifier(causal=False)`).
        tokenizer: its `WordPieceTokenizer`.
        text: one sentence.

    Returns:
        `attention_data(...)` with "encoder self" only (no translation, no target tokens).

    Example:
    >>> from keras_transformer import data, models
    >>> tok = data.WordPieceTokenizer.learn(["a b c", "c b a"], vocab_size=30)
    >>> model = models.build_classifier(tok.vocab_size, 2, num_layers=1, d_model=8,
    ...                                 num_heads=2, dff=16, max_length=8)
    >>> found = encoder_attention(model, tok, "a b")
    >>> list(found["kinds"]), found["source"]
    (['encoder self'], ['[START]', 'a', 'b', '[END]'])
    """
    from keras_transformer import data, models

    _check_text(text)
    names = {layer.name for layer in getattr(model, "layers", [])}
    if not {"encoder_embedding", "encoder_layer_0"} <= names:
        raise UserInputError(
            f"model {getattr(model, 'name', model)!r} has no encoder_embedding and "
            f"encoder_layer_0 layers; pass an encoder-only model (build_encoder, "
            f"build_classifier, build_masked_language_model or "
            f"build_token_classifier(causal=False)), or a Translator for an "
            f"encoder-decoder model"
        )
    config, _ = _model_sizes(model)
    vocab_size = model.get_layer("encoder_embedding").get_config()["vocab_size"]
    probe = models.build_encoder(vocab_size, config=config, return_attention_scores=True)
    models.transfer_weights(model, probe)  # embedding, every layer, the final norm if any
    ids = np.asarray(data.encode_source([text], tokenizer, config.max_length))
    ids = ids[:, : int(np.count_nonzero(ids))]
    scores = probe(ids, training=False)
    weights = [
        np.asarray(scores[f"encoder_layer_{i}_self_attention"][0]) for i in range(config.num_layers)
    ]
    return attention_data(_tokens(ids[0], tokenizer), [], {"encoder self": weights})


def run_attention(run_dir: str | os.PathLike, text: str) -> dict:
    """`attention_data` for a run directory: a translation run, or an encoder run / pre-training.

    Args:
        run_dir: the `--out` directory of `keras-transformer train` (encoder-decoder, or
            `--architecture encoder`) or of `keras-transformer pretrain`.
        text: one sentence.

    Returns:
        `translation_attention(...)` for a translation run, `encoder_attention(...)` for an
        encoder.
    """
    import json

    import keras

    import keras_transformer
    from keras_transformer.data import WordPieceTokenizer
    from keras_transformer.runs import check_run_files

    config_path = pathlib.Path(run_dir, "config.json")
    config = {}
    if config_path.is_file():
        check_run_files(run_dir)  # a damaged config.json or model.keras says so
        config = json.loads(config_path.read_text(encoding="utf-8"))
    if config.get("objective") is None and config.get("architecture") != "encoder":
        return translation_attention(run_dir, text)
    _check_text(text)
    paths = [pathlib.Path(run_dir, "model.keras"), pathlib.Path(run_dir, "tokenizers", "source")]
    if missing := [str(p) for p in paths if not p.exists()]:
        raise FileNotFoundError(
            f"{run_dir} is not a finished encoder run: missing "
            f"{', '.join(missing)}; pass the --out directory of a finished "
            f"'keras-transformer train' or 'pretrain' run"
        )
    keras_transformer.register()
    model = keras.models.load_model(paths[0], safe_mode=True, compile=False)
    return encoder_attention(model, WordPieceTokenizer.load(paths[1]), text)


def explorer_page(source, text: str, *, tokenizer=None) -> str:
    """The explorer page (an HTML string) of a run directory, a `Translator` or an encoder.

    Args:
        source: a run directory (see `run_attention`), a `kt.inference.Translator`, or an
            encoder-only model (then pass `tokenizer`).
        text: one sentence.
        tokenizer: the encoder's tokenizer (only with an encoder model).

    Returns:
        The page, as `render_page` writes it.
    """
    from keras_transformer.inference import Translator

    if isinstance(source, Translator):
        found = translation_attention(source, text)
    elif isinstance(source, (str, os.PathLike)):
        found = run_attention(source, text)
    elif tokenizer is None:
        raise UserInputError(
            f"source={getattr(source, 'name', source)!r}: pass a run directory, a "
            f"Translator, or an encoder model with tokenizer=its tokenizer"
        )
    else:
        found = encoder_attention(source, tokenizer, text)
    if "translation" in found:
        title = f"Attention: {text!r} -> {found['translation']!r}"
    else:
        title = f"Encoder self-attention: {text!r}"
    return render_page(found, title)


def inline_frame(page: str, *, height: int = 600) -> str:
    """An `<iframe srcdoc=...>` holding `page` whole, for a notebook's output or a web page.

    The page is escaped into the attribute (`&`, `<`, `>` and quotes), so the browser reads
    back exactly `page`; nothing is loaded from a file or the network.

    Example:
    >>> frame = inline_frame('<p title="x">a & b</p>', height=100)
    >>> frame.startswith('<div class="kt-attention"><iframe srcdoc="&lt;p title=&quot;x&quot;&gt;a &amp; b')
    True
    """
    check_positive_int("height", height)  # pixels
    # In a <div>: IPython's HTML() warns "Consider using IPython.display.IFrame" at a bare iframe.
    return (
        f'<div class="kt-attention"><iframe srcdoc="{html.escape(page, quote=True)}" '
        f'title="attention explorer" '
        f'style="width: 100%; height: {height}px; border: 1px solid #ddd;"></iframe></div>'
    )


def write_attention_page(
    run_dir, text: str, path: str | os.PathLike, *, tokenizer=None
) -> pathlib.Path:
    """Reads the attention of `text` (translated, or encoded) and writes the explorer to `path`.

    Args:
        run_dir: a run directory, a `Translator` or an encoder model, as in `explorer_page`.
        text: one sentence.
        path: the HTML file to write (its folder must exist).
        tokenizer: the encoder's tokenizer (only with an encoder model).

    Returns:
        The path written.
    """
    path = pathlib.Path(path)
    if path.parent and not path.parent.is_dir():
        raise UserInputError(
            f"--out {path}: the folder {path.parent} does not exist; create it first"
        )
    path.write_text(explorer_page(run_dir, text, tokenizer=tokenizer), encoding="utf-8")
    return path
