#!/usr/bin/env bash
# Creates .venv inside the clone (Debian's system pip refuses installs) and
# installs the package with its test tools. Needs only python3 (3.10 or newer).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "setup: python3 is $(python3 --version 2>&1); keras_transformer needs Python 3.10 or newer." >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  if ! python3 -m venv .venv; then
    rm -rf .venv
    echo "setup: 'python3 -m venv' failed; on Debian or Ubuntu install it with" \
      "'apt install python3-venv' (or python3.X-venv), then run this again." >&2
    exit 1
  fi
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[dev]"
