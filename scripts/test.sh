#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite: lint, then pytest. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# headless Chromium checks the HTML bench report (a test opens it); Debian's package, installed once
if ! command -v chromium >/dev/null && command -v apt-get >/dev/null; then
  (apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; }) \
    || echo "warning: could not install chromium (the HTML report test will say so)" >&2
fi
. .venv/bin/activate
# the suite starts hundreds of Python processes (CLI calls, model servers, jobs): let them reuse compiled bytecode
# (and pytest its rewritten test modules) even where the environment sets PYTHONDONTWRITEBYTECODE
unset PYTHONDONTWRITEBYTECODE
ruff check smneuron inference_code pipelines tests benchmarks scripts
ruff format --check --quiet smneuron inference_code pipelines tests benchmarks scripts  # ruff owns the layout
# three processes on two cores: the suite is CPU-bound, but its tests also wait on servers and measurement windows,
# and a third process fills those waits (measured on this machine: 7:06 against 7:45 with two; the fast loop 46 s
# against 52). An idle one takes tests from a busy one (worksteal), so that all finish together: the slowest tests
# are dealt across the workers' first shares (tests/conftest.py, tests/durations.json)
python -m pytest -n 3 --dist worksteal "$@"
