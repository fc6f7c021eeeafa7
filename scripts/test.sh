#!/usr/bin/env bash
# Sets everything up, then runs lint and the whole test suite (doctests included).
# Two pytest workers (pytest-xdist), one test file per worker at a time, so that
# the notebooks, which share a working directory, still run in order.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The documentation test renders the built site in headless Chromium, and the
# notebooks draw the model graph with Graphviz's `dot` (both Debian packages).
missing=""
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v dot >/dev/null 2>&1 || missing="$missing graphviz"
if [ -n "$missing" ] && command -v apt-get >/dev/null 2>&1; then
  echo "test: installing Debian's$missing for the documentation and notebook tests" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  # shellcheck disable=SC2086
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null; } ||
    echo "test: could not install$missing; the browser test or the model-graph figure will fail" >&2
fi
export TF_CPP_MIN_LOG_LEVEL=2 CUDA_VISIBLE_DEVICES=""
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest -q -n 2 --dist loadfile "$@"
# The layers and model builders use keras.ops only, so they must work on every Keras backend:
# the layer tests and the model smoke tests (marked backend_smoke) again, on JAX (CPU), where
# anything that needs TensorFlow is skipped with its reason (tests/conftest.py). Only for the
# whole suite (no arguments). Measured: 88 passed, 2 skipped, 104 s of CPU time with -n 2
# (3 min wall on a shared, loaded 2-core machine; about one minute where the cores are free).
if [ $# -eq 0 ]; then
  KERAS_BACKEND=jax .venv/bin/python -m pytest -q -n 2 --dist loadfile -m backend_smoke \
    tests/layers tests/models
fi
