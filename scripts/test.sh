#!/usr/bin/env bash
# Sets everything up, then runs lint and the whole test suite (doctests included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export TF_CPP_MIN_LOG_LEVEL=2 CUDA_VISIBLE_DEVICES=""
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest -q "$@"
