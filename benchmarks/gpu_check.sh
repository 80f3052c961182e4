#!/usr/bin/env bash
# The cuda target end to end on an NVIDIA GPU, beside the cpu target in the same run (issue 52 #4):
# compile all-MiniLM-L6-v2 for cuda and for cpu on this machine's CPU, serve each with the shipped inference code
# (`smneuron serve`), invoke it, bench it with `smneuron bench`, and compare (benchmarks/cuda_handler.py prints the
# answers' cosine and texts/s of both, and served req/s + p99 per worker count).
#
#   PYTHON=python3 benchmarks/gpu_check.sh [--seconds 10] [--workers 1,2]
#
# Needs a Python whose torch has CUDA and an NVIDIA GPU. Where there is none, it says so plainly and measures nothing
# (exit 3, so a script that called it knows nothing was checked). The test suite never needs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no NVIDIA GPU on this machine (nvidia-smi finds none): nothing was measured." >&2
  exit 3
fi
if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "gpu_check: $PY has no torch with CUDA (torch.cuda.is_available() is False): nothing was measured." >&2
  echo "gpu_check: set PYTHON to an interpreter whose torch was built for CUDA." >&2
  exit 3
fi
nvidia-smi -L
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
seconds=10
workers=1,2
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    *) echo "gpu_check: unknown option $1 (use --seconds N, --workers 1,2)" >&2; exit 2 ;;
  esac
done
"$PY" benchmarks/cuda_handler.py --precision fp16 --batch 8 --seconds "$seconds" --workers "$workers"
