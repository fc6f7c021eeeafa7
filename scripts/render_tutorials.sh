#!/usr/bin/env bash
# Executes every tutorial at its full size (no KERAS_TRANSFORMER_FAST), in order, in one
# working directory, and stores the executed copies the documentation site shows in
# docs/_rendered/tutorials/ (commit them). Takes an hour or two on a 2-core CPU; uses a GPU
# when one is visible. `--only 07` renders one tutorial (repeatable).
# Uses .venv/bin/python when there is one, else python3 (PYTHON=... picks another).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
export TF_CPP_MIN_LOG_LEVEL=3
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec "$PYTHON" docs/_hooks/notebook_outputs.py "$@"
