"""Training step of the paper's base Transformer on one accelerator: ours against Keras's layers.

Needs Keras 3 and ONE backend (JAX, PyTorch or TensorFlow), chosen as Keras chooses it
(KERAS_BACKEND); nothing on its path imports TensorFlow unless TensorFlow is the backend, so it
runs where only JAX is installed (the GPU machine). It builds, in one process:

* ours: `keras_transformer.models.build_transformer` (6+6 post-LN layers, d_model 512, 8 heads,
  d_ff 2048, one shared 32000-token vocabulary with tied source/target/output embeddings,
  `share_embeddings=True`, sinusoidal positions, dropout 0.1, no attention-weight dropout);
* peer: a Functional model of the same shape made of `keras.layers.MultiHeadAttention`,
  `LayerNormalization`, `Dense`, `Embedding` (same sizes, dropout and tied embeddings);

compiles both with Adam (beta_2 0.98, eps 1e-9) and sparse categorical cross-entropy from float32
logits (`ignore_class=0`), warms both up (compilation), then times them ALTERNATING: each round
runs a chunk of steps of ours, then of the peer, so that clock or thermal drift hits both alike.
A chunk is one `fit` of two epochs of `--steps` steps; only the second epoch is timed (between
two epoch ends, each of which waits for the device), so `fit`'s set-up is left out.
Data: random Zipf-distributed tokens, a copy task (target = source shifted right), no padding.

Reported per model: step time (median over rounds), target tokens/s (batch * length / step),
model FLOPs per step and MFU against the device's dense bf16 peak (taken from the device's name,
or `--peak-tflops`), the FLOP formula, and the losses (finite, falling). `--json` writes it all.

    # GPU machine (see benchmarks/gpu_run.sh): base size, bf16, 64 x 128
    KERAS_BACKEND=jax python benchmarks/gpu_step.py --batch 64 --length 128 --precision bf16
    # CPU smoke test (seconds)
    KERAS_BACKEND=jax python benchmarks/gpu_step.py --tiny
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

# Dense (no sparsity) bf16 tensor-core peaks in TFLOP/s, from the vendors' data sheets; the first
# name found in the device's name wins (so "H100 PCIE" is tried before "H100").
PEAK_BF16_TFLOPS = (
    ("GH200", 989.0),
    ("H200", 989.0),
    ("H100 PCIE", 756.0),
    ("H100 NVL", 835.0),
    ("H100", 989.0),  # SXM, "NVIDIA H100 80GB HBM3"
    ("H800", 989.0),
    ("A100", 312.0),
    ("A800", 312.0),
    ("L40S", 362.0),
    ("L40", 181.0),
    ("L4", 121.0),
    ("A10G", 70.0),
    ("A10", 125.0),
    ("RTX 4090", 165.0),
)

FLOPS_FORMULA = (
    "FLOPs/step = 6*B*(S*P_enc + T*P_dec) + 6*B*T*d*V + 12*B*L*d*(S*S + T*T + T*S), "
    "P_enc = L*(4*d*d + 2*d*dff), P_dec = L*(8*d*d + 2*d*dff): forward + backward = 3 x forward, "
    "a multiply-add = 2 FLOPs; weight matmuls over the tokens they touch, the tied output "
    "projection (d x V), and attention's QK^T and weights x V (encoder self, decoder self counted "
    "in full despite the causal mask, cross); biases, LayerNorm, softmax, embedding look-ups, "
    "loss and optimizer left out"
)


def step_flops(batch, src_len, tgt_len, layers, d_model, dff, vocab) -> float:
    """Model FLOPs of one training step (see FLOPS_FORMULA).

    >>> round(step_flops(64, 128, 128, 6, 512, 2048, 32000) / 1e12, 3)
    3.086
    """
    b, s, t, n, d, f, v = batch, src_len, tgt_len, layers, d_model, dff, vocab
    p_enc = n * (4 * d * d + 2 * d * f)
    p_dec = n * (8 * d * d + 2 * d * f)
    return (
        6.0 * b * (s * p_enc + t * p_dec)
        + 6.0 * b * t * d * v
        + 12.0 * b * n * d * (s * s + t * t + t * s)
    )


def peak_for(device_name: str) -> float | None:
    """The dense bf16 peak (TFLOP/s) of a device, by its name; None when unknown (a CPU).

    >>> peak_for("NVIDIA H100 80GB HBM3"), peak_for("NVIDIA H100 PCIe"), peak_for("cpu")
    (989.0, 756.0, None)
    """
    upper = device_name.upper()
    for name, peak in PEAK_BF16_TFLOPS:
        if name in upper:
            return peak
    return None


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--batch", default=None, help="batch size, or a comma list (64,256); 64")
    p.add_argument("--length", type=int, default=128, help="source and target length")
    p.add_argument("--precision", default="bf16", help="bf16, fp32, or a comma list")
    p.add_argument("--layers", type=int, default=6, help="layers per stack")
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--dff", type=int, default=2048)
    p.add_argument("--vocab", type=int, default=32000, help="the one shared vocabulary")
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--models", default="ours,peer", help="comma list of ours, peer")
    p.add_argument("--warmup-steps", type=int, default=5, help="steps of each warm-up fit")
    p.add_argument("--steps", type=int, default=20, help="timed steps per chunk")
    p.add_argument("--rounds", type=int, default=5, help="alternating rounds (chunks per model)")
    p.add_argument(
        "--jit-compile",
        choices=("auto", "on", "off"),
        default="auto",
        help="auto: on for JAX and TensorFlow, off for PyTorch (torch.compile is another study)",
    )
    p.add_argument(
        "--flash-attention",
        choices=("auto", "off"),
        default="auto",
        help="off: keras.config.disable_flash_attention() (Keras's MHA then skips cuDNN/flash)",
    )
    p.add_argument(
        "--peak-tflops",
        type=float,
        default=None,
        help="the device's dense bf16 peak for MFU; default: from the device's name "
        "(H100 SXM 989); MFU is left out on an unknown device (a CPU)",
    )
    p.add_argument("--json", default=None, help="write every measurement to this file")
    p.add_argument(
        "--tiny",
        action="store_true",
        help="CPU smoke size: 1+1 layers, d_model 32, 2 heads, dff 64, vocab 300, length 12, "
        "batch 4 unless --batch is given, 2 rounds of 2 steps (overrides the size and step flags)",
    )
    a = p.parse_args(argv)
    if a.tiny:
        a.layers, a.d_model, a.heads, a.dff, a.vocab, a.length = 1, 32, 2, 64, 300, 12
        a.warmup_steps, a.steps, a.rounds = 1, 2, 2
        a.batch = a.batch or "4"
    a.batch = a.batch or "64"
    a.batches = [int(x) for x in str(a.batch).split(",") if x.strip()]
    a.precisions = [x.strip() for x in a.precision.split(",") if x.strip()]
    a.model_names = [x.strip() for x in a.models.split(",") if x.strip()]
    for x in a.precisions:
        if x not in ("bf16", "fp32"):
            p.error(f"--precision: unknown {x!r}; use bf16 or fp32")
    for x in a.model_names:
        if x not in ("ours", "peer"):
            p.error(f"--models: unknown {x!r}; use ours and/or peer")
    if a.d_model % a.heads:
        p.error(f"--d-model={a.d_model} must be divisible by --heads={a.heads}")
    return a


# ------------------------------------------------------------------------------------- device


def device_info() -> dict:
    """The backend, its version and the accelerator's name, without importing another backend."""
    backend = keras.backend.backend()
    info = {"backend": backend, "keras": keras.__version__, "python": platform.python_version()}
    name = platform.processor() or platform.machine() or "cpu"
    kind = "cpu"
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        info["backend_version"] = jax.__version__
        kind, name = device.platform, getattr(device, "device_kind", str(device))
    elif backend == "torch":
        import torch

        info["backend_version"] = torch.__version__
        if torch.cuda.is_available():
            kind, name = "gpu", torch.cuda.get_device_name(0)
    elif backend == "tensorflow":
        import tensorflow as tf  # the backend itself: imported only when chosen

        info["backend_version"] = tf.__version__
        gpus = tf.config.list_physical_devices("GPU")
        if gpus:
            details = tf.config.experimental.get_device_details(gpus[0])
            kind, name = "gpu", details.get("device_name", "GPU")
    info.update(device_kind=kind, device_name=str(name))
    return info


# ------------------------------------------------------------------------------------- models


def build_ours(a) -> keras.Model:
    """`kt.models.build_transformer` at the asked size (imports Keras only, no TensorFlow)."""
    from keras_transformer.models import build_transformer

    return build_transformer(
        a.vocab,
        a.vocab,
        num_layers=a.layers,
        d_model=a.d_model,
        num_heads=a.heads,
        dff=a.dff,
        dropout=a.dropout,
        attention_dropout=0.0,
        max_length=max(512, a.length),
        norm_first=False,
        learned_positions=False,
        activation="relu",
        share_embeddings=True,
        name="ours",
    )


def sinusoid(length: int, depth: int) -> np.ndarray:
    """The paper's table (sines and cosines interleaved), (length, depth) float32."""
    position = np.arange(length)[:, None]
    rate = 1.0 / 10000 ** (2 * (np.arange(depth) // 2) / depth)
    angle = position * rate[None, :]
    table = np.where(np.arange(depth) % 2 == 0, np.sin(angle), np.cos(angle))
    return table.astype("float32")


class TiedEmbedding(keras.layers.Embedding):
    """`keras.layers.Embedding` that also projects onto the vocabulary: `x @ E^T` (reverse)."""

    def call(self, inputs, reverse=False):
        if reverse:
            matrix = keras.ops.cast(self.embeddings, inputs.dtype)
            return keras.ops.cast(keras.ops.matmul(inputs, keras.ops.transpose(matrix)), "float32")
        return super().call(inputs)

    def compute_mask(self, inputs, mask=None):
        if "int" not in keras.backend.standardize_dtype(inputs.dtype):
            return mask  # the reverse projection keeps the decoder's mask
        return super().compute_mask(inputs, mask)

    def compute_output_spec(self, inputs, reverse=False):
        if reverse:
            return keras.KerasTensor((*inputs.shape[:-1], self.input_dim), "float32")
        return keras.KerasTensor((*inputs.shape, self.output_dim), self.compute_dtype)


class ScaleAddPositions(keras.layers.Layer):
    """`x * sqrt(d_model) + sinusoid`; passes the Keras mask (ids != 0) on."""

    def __init__(self, max_length, **kwargs):
        super().__init__(**kwargs)
        self.max_length = max_length
        self.supports_masking = True

    def build(self, input_shape):
        self.table = sinusoid(self.max_length, input_shape[-1])

    def call(self, x):
        table = keras.ops.convert_to_tensor(self.table[: x.shape[1]], dtype=x.dtype)[None]
        return x * keras.ops.cast(math.sqrt(x.shape[-1]), x.dtype) + table

    def get_config(self):
        return {**super().get_config(), "max_length": self.max_length}


def build_peer(a) -> keras.Model:
    """The same Transformer from Keras's layers: MultiHeadAttention, LayerNormalization, Dense,
    Embedding (one tied matrix), Dropout and Add; masks from `mask_zero` propagate as Keras does."""
    layers, d = keras.layers, a.d_model
    source = keras.Input((a.length,), dtype="int32", name="source")  # fixed, as fit feeds them
    target = keras.Input((a.length,), dtype="int32", name="target")
    embedding = TiedEmbedding(a.vocab, d, mask_zero=True, name="shared_embedding")

    def embed(ids, prefix):
        x = ScaleAddPositions(max(512, a.length), name=f"{prefix}_positions")(embedding(ids))
        return layers.Dropout(a.dropout, name=f"{prefix}_dropout")(x)

    def add_norm(x, out, name):  # post-LN: LayerNorm(x + Dropout(sublayer(x)))
        out = layers.Dropout(a.dropout, name=f"{name}_dropout")(out)
        return layers.LayerNormalization(epsilon=1e-6, name=f"{name}_norm")(layers.Add()([x, out]))

    def feed_forward(x, name):
        inner = layers.Dense(a.dff, activation="relu", name=f"{name}_inner")(x)
        return layers.Dense(d, name=f"{name}_outer")(inner)

    def attention(name):
        return layers.MultiHeadAttention(a.heads, d // a.heads, dropout=0.0, name=name)

    x = embed(source, "encoder")
    for i in range(a.layers):
        n = f"encoder_{i}"
        x = add_norm(x, attention(f"{n}_self_attention")(x, x), f"{n}_self_attention")
        x = add_norm(x, feed_forward(x, f"{n}_ffn"), f"{n}_ffn")
    context = x
    y = embed(target, "decoder")
    for i in range(a.layers):
        n = f"decoder_{i}"
        causal = attention(f"{n}_self_attention")(y, y, use_causal_mask=True)
        y = add_norm(y, causal, f"{n}_self_attention")
        y = add_norm(y, attention(f"{n}_cross_attention")(y, context), f"{n}_cross_attention")
        y = add_norm(y, feed_forward(y, f"{n}_ffn"), f"{n}_ffn")
    logits = embedding(y, reverse=True)
    return keras.Model({"source": source, "target": target}, logits, name="keras_layers_peer")


BUILDERS = {"ours": build_ours, "peer": build_peer}


# --------------------------------------------------------------------------------------- data


def copy_task(a, batch: int, steps: int, seed: int):
    """`steps` batches of Zipf-distributed ids in [3, vocab) (0 pad, 1 start; none padded):
    inputs {"source", "target" = labels shifted right}, labels."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, a.vocab - 2, dtype=np.float64)
    probs = 1.0 / (ranks + 10.0)
    probs /= probs.sum()
    ids = (rng.choice(a.vocab - 3, size=(batch * steps, a.length), p=probs) + 3).astype("int32")
    start = np.ones((batch * steps, 1), "int32")
    return {"source": ids, "target": np.concatenate([start, ids[:, :-1]], axis=1)}, ids


# ----------------------------------------------------------------------------------- measuring


class EpochEnds(keras.callbacks.Callback):
    """Clock readings at each epoch's end, when `fit` has waited for the device (its logs are
    read back); no batch hooks, so steps stay asynchronous inside an epoch."""

    def on_train_begin(self, logs=None):
        self.ends, self.losses = [], []

    def on_epoch_end(self, epoch, logs=None):
        self.ends.append(time.perf_counter())
        self.losses.append(float(logs["loss"]))


def jit_setting(a) -> bool:
    if a.jit_compile == "auto":
        return keras.backend.backend() != "torch"
    return a.jit_compile == "on"


def seed_everything(seed: int) -> None:
    """Seeds Python, NumPy and the backend. Not `keras.utils.set_random_seed` on JAX or torch:
    it imports TensorFlow wherever TensorFlow is installed (to seed it too), and this script must
    not load TensorFlow beside another backend. Keras's unseeded initializers and dropout draw
    their seeds from Python's `random`, so this keeps runs repeatable."""
    if keras.backend.backend() == "tensorflow":
        keras.utils.set_random_seed(seed)
        return
    random.seed(seed)
    np.random.seed(seed)
    if keras.backend.backend() == "torch":
        import torch

        torch.manual_seed(seed)


def prepare(a, name: str, batch: int) -> dict:
    """Builds and compiles one model, and runs its warm-up fit (compilation included)."""
    seed_everything(0)
    t0 = time.perf_counter()
    model = BUILDERS[name](a)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-4, beta_1=0.9, beta_2=0.98, epsilon=1e-9),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
        jit_compile=jit_setting(a),
    )
    build_s = time.perf_counter() - t0
    x, y = copy_task(a, batch, a.warmup_steps, seed=1)
    t0 = time.perf_counter()
    history = model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
    return {
        "model": model,
        "name": name,
        "params": int(model.count_params()),
        "build_s": round(build_s, 2),
        "warmup_fit_s": round(time.perf_counter() - t0, 2),
        "warmup_loss": float(history.history["loss"][-1]),
        "data": copy_task(a, batch, a.steps, seed=2),
        "step_s": [],
        "losses": [],
    }


def timed_chunk(run: dict, batch: int) -> None:
    """Two epochs of `--steps` steps; the second one, between two epoch ends, is timed."""
    (x, y), ends = run["data"], EpochEnds()
    run["model"].fit(x, y, batch_size=batch, epochs=2, shuffle=False, verbose=0, callbacks=[ends])
    steps = len(y) // batch
    run["step_s"].append((ends.ends[1] - ends.ends[0]) / steps)
    run["losses"].extend(ends.losses)


def measure(a, batch: int, precision: str, info: dict, peak_tflops: float | None) -> dict:
    """Ours and the peer at one batch size and precision, alternating after warm-up."""
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy("mixed_bfloat16" if precision == "bf16" else "float32")
    runs = []
    for name in a.model_names:
        say(f"{batch}x{a.length} {precision} {name}: build, compile, warm up ...")
        runs.append(prepare(a, name, batch))
        say(
            f"  {runs[-1]['params'] / 1e6:.2f}M parameters, warm-up fit {runs[-1]['warmup_fit_s']} s"
        )
    for r in range(a.rounds):
        for run in runs:
            timed_chunk(run, batch)
        say(
            f"  round {r + 1}/{a.rounds}: "
            + ", ".join(f"{run['name']} {run['step_s'][-1] * 1e3:.2f} ms" for run in runs)
        )
    flops = step_flops(batch, a.length, a.length, a.layers, a.d_model, a.dff, a.vocab)
    results = {}
    for run in runs:
        step = statistics.median(run["step_s"])
        losses = [run["warmup_loss"], *run["losses"]]
        result = {
            "params": run["params"],
            "build_s": run["build_s"],
            "warmup_fit_s": run["warmup_fit_s"],
            "step_ms": step * 1e3,
            "step_ms_per_round": [round(s * 1e3, 3) for s in run["step_s"]],
            "target_tokens_per_s": batch * a.length / step,
            "flops_per_step": flops,
            "achieved_tflops": flops / step / 1e12,
            "mfu": None if peak_tflops is None else flops / step / 1e12 / peak_tflops,
            "losses": [round(v, 4) for v in losses],
            "finite": all(math.isfinite(v) for v in losses),
            "loss_fell": losses[-1] < losses[0],
        }
        results[run["name"]] = result
        del run["model"]
    entry = {"batch": batch, "length": a.length, "precision": precision, "models": results}
    if "ours" in results and "peer" in results:
        entry["ours_over_peer_tokens_per_s"] = (
            results["ours"]["target_tokens_per_s"] / results["peer"]["target_tokens_per_s"]
        )
    keras.mixed_precision.set_global_policy("float32")
    return entry


def line(entry: dict, name: str) -> str:
    r = entry["models"][name]
    mfu = "n/a (no peak for this device)" if r["mfu"] is None else f"{100 * r['mfu']:.1f}%"
    return (
        f"{entry['batch']}x{entry['length']} {entry['precision']} {name:<4}: "
        f"step {r['step_ms']:.2f} ms | {r['target_tokens_per_s']:,.0f} target tokens/s | "
        f"{r['achieved_tflops']:.3g} TFLOP/s | MFU {mfu} | params {r['params'] / 1e6:.2f}M | "
        f"loss {r['losses'][0]:.3f} -> {r['losses'][-1]:.3f}"
        f"{'' if r['finite'] else ' NOT FINITE'}"
    )


START = time.perf_counter()


def say(message: str) -> None:
    print(f"[{time.perf_counter() - START:6.1f}s] {message}", flush=True)


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.flash_attention == "off":
        keras.config.disable_flash_attention()
    info = device_info()
    peak = a.peak_tflops if a.peak_tflops is not None else peak_for(info["device_name"])
    import keras_transformer

    info["keras_transformer"] = keras_transformer.__version__
    info["jit_compile"] = jit_setting(a)
    info["flash_attention"] = a.flash_attention
    print(
        f"backend {info['backend']} {info.get('backend_version', '')} | keras {info['keras']} | "
        f"keras_transformer {info['keras_transformer']} | python {info['python']}"
    )
    print(
        f"device: {info['device_kind']} {info['device_name']} | jit_compile {info['jit_compile']}"
    )
    size = f"{a.layers}+{a.layers} layers, d_model {a.d_model}, {a.heads} heads, dff {a.dff}"
    print(f"model: {size}, shared vocabulary {a.vocab}, dropout {a.dropout}, length {a.length}")
    print(FLOPS_FORMULA)
    for batch in a.batches:
        flops = step_flops(batch, a.length, a.length, a.layers, a.d_model, a.dff, a.vocab)
        print(f"  B={batch} S=T={a.length}: {flops / 1e12:.4f} TFLOP ({flops:.4g} FLOPs) per step")
    if peak is None:
        print("MFU: not computed (no known peak for this device; pass --peak-tflops)")
    else:
        print(
            f"MFU = FLOPs/step / step time / {peak:g} TFLOP/s (dense bf16 peak of this device; "
            "fp32 runs are divided by the same bf16 peak)"
        )
    report = {
        "env": info,
        "peak_tflops": peak,
        "flops_formula": FLOPS_FORMULA,
        "config": {
            k: getattr(a, k)
            for k in (
                "batches",
                "length",
                "precisions",
                "layers",
                "d_model",
                "heads",
                "dff",
                "vocab",
                "dropout",
                "model_names",
                "warmup_steps",
                "steps",
                "rounds",
            )
        },
        "results": [],
    }

    def dump():
        if a.json:
            os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
            with open(a.json, "w") as fh:
                json.dump(report, fh, indent=1)

    ok = True
    for batch in a.batches:
        for precision in a.precisions:
            entry = measure(a, batch, precision, info, peak)
            report["results"].append(entry)
            dump()
            for name in entry["models"]:
                say("RESULT " + line(entry, name))
                ok &= entry["models"][name]["finite"]
            if "ours_over_peer_tokens_per_s" in entry:
                say(
                    f"RESULT {batch}x{a.length} {precision} ours/peer tokens/s: "
                    f"{entry['ours_over_peer_tokens_per_s']:.3f}"
                )
    report["env"]["tensorflow_imported"] = "tensorflow" in sys.modules
    print(f"tensorflow imported: {report['env']['tensorflow_imported']}")
    dump()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
