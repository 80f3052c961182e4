#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite: lint, then pytest. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
. .venv/bin/activate
ruff check smneuron inference_code pipelines tests benchmarks scripts
ruff format --check --quiet smneuron inference_code pipelines tests benchmarks scripts  # ruff owns the layout
python -m pytest -n 2 "$@"  # two processes: much of the suite waits on model servers and subprocesses
