"""`keras-transformer benchmark` at the tiny size: output structure, positive numbers,
consistent ratios. Speed itself is never asserted (benchmarks/ measures it)."""

from __future__ import annotations

import argparse
import json

import pytest

from keras_transformer.analysis import throughput as benchmarking
from keras_transformer.choices import BENCHMARK_SIZES
from keras_transformer.commands import benchmark


def run(argv):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    benchmark.register(sub)
    args = parser.parse_args(["benchmark", *argv])
    return args.func(args)


def test_tiny_benchmark_prints_and_writes_consistent_results(tmp_path, capsys):
    path = tmp_path / "out" / "bench.json"
    argv = ["--size", "tiny", "--models", "ours", "keras_mha", "--repeats", "3"]
    assert run([*argv, "--decoding", "--new-tokens", "4", "--json", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "machine: " in printed and "| ours no-xla fp32 |" in printed
    assert "| keras_mha no-xla fp32 |" in printed and "cache speed-up" in printed

    results = json.loads(path.read_text())
    assert results["machine"]["cores"] >= 1
    training = results["training"]
    assert training["matmul_peak_gflops"] > 0 and training["tokens_per_step"] > 0
    rows = {row["model"]: row for row in training["rows"]}
    assert list(rows) == ["ours", "keras_mha"]
    for row in rows.values():
        for key in ("step_ms", "tokens_per_s", "mfu", "step_gflop", "parameters"):
            assert row[key] > 0, (row["variant"], key)
        # tokens/s is the batch's non-padding tokens over the median step time
        expected = training["tokens_per_step"] / (row["step_ms"] / 1000)
        assert row["tokens_per_s"] == pytest.approx(expected, rel=0.01)
    assert rows["ours"]["speed_vs_reference"] == 1.0
    # peer time / ours and the peer's speed relative to ours are reciprocal
    peer = rows["keras_mha"]
    assert peer["ours_speedup"] * peer["speed_vs_reference"] == pytest.approx(1.0, rel=0.01)
    assert rows["ours"]["parameters"] == peer["parameters"]  # equal configuration

    decoding = results["decoding"]
    assert decoding["new_tokens"] == 4
    assert decoding["cached_tokens_per_s"] > 0 and decoding["uncached_tokens_per_s"] > 0
    assert decoding["cache_speedup"] > 0


def test_flop_formula_counts_the_tutorial_heads():
    kwargs = dict(
        num_layers=2,
        d_model=16,
        num_heads=4,
        dff=32,
        target_vocab_size=50,
        batch=2,
        source_length=6,
        target_length=5,
    )
    paper = benchmarking.transformer_step_flops(**kwargs)
    assert paper == benchmarking.transformer_step_flops(**kwargs, key_dim=4)
    assert benchmarking.transformer_step_flops(**kwargs, key_dim=16) > paper


def test_bad_arguments_are_named(capsys):
    # refused while parsing, in one line naming the flag and the fix
    with pytest.raises(SystemExit) as exit_info:
        run(["--size", "tiny", "--repeats", "0"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "argument --repeats: 0 is less than 1" in error and ">= 1" in error


def test_memory_probe_runs_the_installed_module_in_a_fresh_process():
    result = benchmarking.measure_memory("ours", BENCHMARK_SIZES["tiny"], steps=1)
    assert result["peak_rss_mb"] >= result["baseline_rss_mb"] > 0
    assert result["peak_increase_mb"] == pytest.approx(
        result["peak_rss_mb"] - result["baseline_rss_mb"], abs=0.11
    )
