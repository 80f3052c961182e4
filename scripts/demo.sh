#!/usr/bin/env bash
# Set up (if needed) and run `smneuron demo`: the whole path on this machine, no AWS account needed.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
. .venv/bin/activate
exec smneuron demo "$@"
