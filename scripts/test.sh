#!/usr/bin/env bash
# Sets everything up, then runs lint and the whole test suite (doctests included).
# Two pytest workers (pytest-xdist), one test file per worker at a time, so that
# the notebooks, which share a working directory, still run in order.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export TF_CPP_MIN_LOG_LEVEL=2 CUDA_VISIBLE_DEVICES=""
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest -q -n 2 --dist loadfile "$@"
