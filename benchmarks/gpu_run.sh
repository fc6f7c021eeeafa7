#!/usr/bin/env bash
# The GPU benchmark, one call: the base model's training step, ours against Keras's layers,
# bf16, batch 64 x 128 and 256 x 128 (benchmarks/gpu_step.py; docs/performance.md reads it).
#
# The GPU machine has JAX with CUDA but neither Keras nor TensorFlow, and reaches no registry,
# so Keras travels as wheels in the git-ignored folder .whl/. Here, once, with a registry:
#     bash benchmarks/gpu_run.sh prepare        # downloads keras 3.15.1, namex, optree, typing_extensions, packaging (cp312)
# There, from the project root, with .whl carried (about 5 minutes; flags pass to gpu_step.py):
#     bash benchmarks/gpu_run.sh [--precision bf16,fp32] [--rounds 5] ...
# It writes $OUT/log and $OUT/gpu_step_<batch>x128.json. On a CPU, a smoke run of the same path:
#     PYTHON=/path/to/venv-with-jax/bin/python bash benchmarks/gpu_run.sh --tiny
set -o pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"

if [ "${1:-}" = "prepare" ]; then
  mkdir -p .whl
  exec "$PYTHON" -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl "keras==3.15.1" namex optree typing_extensions packaging
fi

export OUT="${OUT:-/tmp/gpu_step_out}"
mkdir -p "$OUT"
{
  if compgen -G ".whl/*.whl" >/dev/null; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH="/tmp/site:$PWD"
  else
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
  fi
  export KERAS_BACKEND=jax XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
  export TF_CPP_MIN_LOG_LEVEL=2
  command -v nvidia-smi >/dev/null && nvidia-smi -L
  status=0
  for batch in 64 256; do
    echo "=== gpu_step.py --batch $batch --length 128 $*"
    timeout 280 "$PYTHON" benchmarks/gpu_step.py --batch "$batch" --length 128 --precision bf16 \
      --json "$OUT/gpu_step_${batch}x128.json" "$@" || status=1
  done
  exit $status
} 2>&1 | tee "$OUT/log"
