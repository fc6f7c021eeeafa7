#!/usr/bin/env bash
# Creates .venv inside the clone (Debian's system pip refuses installs) and
# installs the package with its test tools. Needs only python3, 3.11 to 3.13
# (keras 3.15 needs 3.11 or newer; tensorflow 2.21 has no wheels for 3.14).
# PYTHON=python3.12 bash scripts/setup.sh picks another interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] < (3, 14))'; then
  echo "setup: $PYTHON is $("$PYTHON" --version 2>&1); keras_transformer needs Python 3.11, 3.12" \
    "or 3.13 (install one and run: PYTHON=python3.12 bash scripts/setup.sh)." >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  if ! "$PYTHON" -m venv .venv; then
    rm -rf .venv
    echo "setup: 'python3 -m venv' failed; on Debian or Ubuntu install it with" \
      "'apt install python3-venv' (or python3.X-venv), then run this again." >&2
    exit 1
  fi
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[dev]"
