#!/usr/bin/env bash
# Sets everything up, then runs the main job: `keras-transformer train` with
# its defaults (numbers en -> de, embedded, no network). Extra arguments are
# passed to `keras-transformer train`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export TF_CPP_MIN_LOG_LEVEL=2
.venv/bin/keras-transformer train "$@"
