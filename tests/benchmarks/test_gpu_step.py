"""`benchmarks/gpu_step.py`: the GPU training-step benchmark, run at its CPU smoke size.

The script lives beside the package in a clone (skipped where benchmarks/ is absent). It must
run with Keras and one backend alone: here it runs in a subprocess under JAX when JAX is
installed (the dev extra has it), else under the backend at hand, and reports whether
TensorFlow was imported (it must not be under JAX or PyTorch).
"""

from __future__ import annotations

import doctest
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_step.py"
pytestmark = pytest.mark.skipif(not SCRIPT.is_file(), reason="benchmarks/ is not here")


def _backend() -> str:
    if importlib.util.find_spec("jax") is not None:
        return "jax"
    return os.environ.get("KERAS_BACKEND", "tensorflow")


def _load():
    spec = importlib.util.spec_from_file_location("gpu_step", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_flop_formula_and_device_peaks():
    gpu_step = _load()
    # base model, 64 x 128: 6*B*(S*P_enc + T*P_dec) + 6*B*T*d*V + 12*B*L*d*(S^2 + T^2 + T*S)
    b, s, n, d, f, v = 64, 128, 6, 512, 2048, 32000
    p_enc, p_dec = n * (4 * d * d + 2 * d * f), n * (8 * d * d + 2 * d * f)
    expected = 6 * b * s * (p_enc + p_dec) + 6 * b * s * d * v + 12 * b * n * d * 3 * s * s
    assert gpu_step.step_flops(b, s, s, n, d, f, v) == expected
    assert gpu_step.peak_for("NVIDIA H100 80GB HBM3") == 989.0
    assert gpu_step.peak_for("NVIDIA H100 PCIe") == 756.0
    assert gpu_step.peak_for("NVIDIA H200") == 989.0
    assert gpu_step.peak_for("NVIDIA A100-SXM4-80GB") == 312.0
    assert gpu_step.peak_for("cpu") is None
    # 3.086 TFLOP at 64 x 128: the shared harness's H100 run, 16.85 ms at 18.5% of 989 TFLOP/s,
    # implies 3.08 TFLOP per step.
    result = doctest.testmod(gpu_step)
    assert result.attempted >= 2 and result.failed == 0


def test_tiny_run_measures_both_models_without_tensorflow(tmp_path):
    backend = _backend()
    out = tmp_path / "gpu_step.json"
    env = {
        **os.environ,
        "KERAS_BACKEND": backend,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "CUDA_VISIBLE_DEVICES": "",
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    command = [sys.executable, str(SCRIPT), "--tiny", "--peak-tflops", "1", "--json", str(out)]
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "FLOPs/step = 6*B*(S*P_enc + T*P_dec)" in run.stdout  # the formula is printed
    assert "ours/peer tokens/s" in run.stdout
    report = json.loads(out.read_text())
    assert report["env"]["backend"] == backend
    if backend != "tensorflow":
        assert report["env"]["tensorflow_imported"] is False
    (entry,) = report["results"]
    assert (entry["batch"], entry["length"], entry["precision"]) == (4, 12, "bf16")
    for name in ("ours", "peer"):
        result = entry["models"][name]
        assert result["step_ms"] > 0 and result["target_tokens_per_s"] > 0
        assert result["finite"] and 0 < result["mfu"]
        assert len(result["step_ms_per_round"]) == 2
    # Same shape, same parameter count (tied 300 x 32 embedding, one layer each side).
    assert entry["models"]["ours"]["params"] == entry["models"]["peer"]["params"]
    assert entry["ours_over_peer_tokens_per_s"] > 0
