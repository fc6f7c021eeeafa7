"""`benchmarks/plan_decisions.py`: the plan's decisions over a grid, compared between two dumps.

Loaded by path (the scripts live beside the package in a clone) and skipped where the folder
is absent.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "plan_decisions.py"
pytestmark = pytest.mark.skipif(not SCRIPT.is_file(), reason="benchmarks/ is not here")


@pytest.fixture()
def script(monkeypatch):
    spec = importlib.util.spec_from_file_location("plan_decisions", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "PAIRS", [2000, 60_000])
    monkeypatch.setattr(module, "WORDS", (8, 20))
    monkeypatch.setattr(module, "BUDGETS", (60, 1800))
    return module


def test_dump_records_the_plan_and_compare_names_what_moved(script, tmp_path, capsys):
    from keras_transformer.training import planning

    old, new = tmp_path / "old.json", tmp_path / "new.json"
    script.dump(str(old))
    decisions = json.loads(old.read_text())
    assert len(decisions) == 8
    stats = planning.CorpusStats(60_000, 1_200_000, 1_200_000, 0, 0, 0, 0, 20, 20, 40, 40)
    plan = planning.plan_training(stats, budget_seconds=1800)
    assert decisions["60000 pairs of 20 words, 1800 s"][:3] == [
        plan.model,
        plan.vocab_size,
        plan.dropout,
    ]
    script.compare(str(old), str(old))
    assert "changed: rung 0, vocab_size 0, dropout 0, warmup_steps 0, planned_steps 0" in (
        capsys.readouterr().out
    )
    moved = dict(decisions)
    moved["2000 pairs of 8 words, 60 s"] = ["mini", 3500, 0.5, 7, 70]
    new.write_text(json.dumps(moved))
    script.compare(str(old), str(new))
    out = capsys.readouterr().out
    assert "changed: rung 1, vocab_size 1, dropout 1, warmup_steps 1, planned_steps 1" in out
    assert "rung: 2000 pairs of 8 words, 60 s:" in out
