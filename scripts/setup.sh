#!/usr/bin/env bash
# Create .venv and install smneuron with everything the demo and the tests need.
# torch goes first, pinned to the CPU wheel: any other torch spec pulls gigabytes of CUDA packages.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
stamp=.venv/.smneuron-installed
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  python -m pip install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
  python -m pip install -q "torch==2.13.0" 2>&1 | grep -v "^WARNING: Location" || true
  # SageMaker SDK v2 -> v3: the two share the `sagemaker` package directories, and an upgrade in place
  # leaves v3 without files v2's uninstall removed (sagemaker.serve.spec): remove v2 first
  if python -c "import importlib.metadata as m, sys; sys.exit(0 if m.version('sagemaker').startswith('2.') else 1)" 2>/dev/null; then
    python -m pip uninstall -y -q sagemaker sagemaker-core
  fi
  python -m pip install -q -e ".[compile,serve,bench,pipeline,local,torchserve,dev]" 2>&1 | grep -v "^WARNING: Location" || true
  python -c "import torch, smneuron, transformers, moto" # fail here, not later, when an install broke
  AWS_DEFAULT_REGION=us-east-1 python -c "import sagemaker.mlops.workflow.pipeline, sagemaker.serve.model_builder"
  echo "$want" > "$stamp"
fi
