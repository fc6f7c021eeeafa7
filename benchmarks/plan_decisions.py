"""What the plan decides over a grid of corpora and budgets, to compare two checkouts.

For every corpus shape (pairs x words per sentence) and budget, records what `plan_training`
and `plan_schedule` decide: the rung, the vocabulary, the dropout, the warm-up and the planned
steps. Run `dump` under each checkout, then `compare`:

    PYTHONPATH=/path/to/old python benchmarks/plan_decisions.py dump old.json
    PYTHONPATH=.            python benchmarks/plan_decisions.py dump new.json
    python benchmarks/plan_decisions.py compare old.json new.json

Pure Python (no TensorFlow work): a few seconds.
"""

from __future__ import annotations

import argparse
import collections
import json

PAIRS = [*range(250, 10_000, 250), *range(10_000, 300_001, 1000)]
WORDS = (3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 18, 20, 24, 28, 32, 40)
BUDGETS = (30, 60, 90, 120, 180, 300, 600, 1200, 1800, 3600)
FIELDS = ("rung", "vocab_size", "dropout", "warmup_steps", "planned_steps")


def dump(path: str) -> None:
    from keras_transformer.training import planning

    decisions = {}
    for pairs in PAIRS:
        for words in WORDS:
            stats = planning.CorpusStats(
                pairs, pairs * words, pairs * words, 0, 0, 0, 0, words, words, 2 * words, 2 * words
            )
            for budget in BUDGETS:
                plan = planning.plan_training(stats, budget_seconds=budget)
                tokens = planning.batch_tokens(64, stats.target_words, pairs, 1.5, plan.max_length)
                schedule = planning.plan_schedule(
                    "tsv",
                    plan._asdict(),
                    budget_seconds=budget,
                    warmup_steps=None,
                    steps_per_epoch=max(1, pairs // 64),
                    tokens_per_batch=tokens,
                )
                decisions[f"{pairs} pairs of {words} words, {budget} s"] = [
                    plan.model,
                    plan.vocab_size,
                    plan.dropout,
                    schedule.warmup_steps,
                    schedule.total_steps,
                ]
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(decisions, handle)
    print(f"{len(decisions)} plans written to {path}")


def compare(old_path: str, new_path: str, shown: int = 8) -> None:
    with open(old_path, encoding="utf-8") as handle:
        old = json.load(handle)
    with open(new_path, encoding="utf-8") as handle:
        new = json.load(handle)
    moved = collections.defaultdict(list)
    for key, before in old.items():
        for index, field in enumerate(FIELDS):
            if before[index] != new[key][index]:
                moved[field].append(f"{key}: {before} -> {new[key]}")
    print(f"{len(old)} plans; changed: " + (", ".join(f"{f} {len(moved[f])}" for f in FIELDS)))
    for field in FIELDS:
        for line in moved[field][:shown]:
            print(f"  {field}: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("dump").add_argument("path")
    both = commands.add_parser("compare")
    both.add_argument("old")
    both.add_argument("new")
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.path)
    else:
        compare(args.old, args.new)


if __name__ == "__main__":
    main()
