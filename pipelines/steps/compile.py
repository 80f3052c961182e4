"""Compile step: compile + package + upload the candidate, and the reference outputs on CPU.

Outputs: ``result/compile.json`` (model_data, sha256, target, versions: the CompileResult property
file), ``reference/`` (the evaluation records and the uncompiled model's outputs for them) and
``requests/requests.jsonl`` (one request per record, the Batch Transform input).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import step_common

from smneuron.artifact.staging import stage
from smneuron.compilation.entry import compile_model
from smneuron.evaluation import encoder
from smneuron.evaluation import scoring as evaluation
from smneuron.specs.models import CompileSpec, validate


def main() -> None:
    ap = step_common.parser(__doc__)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--buckets", required=True)
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--auto-cast", required=True)
    ap.add_argument("--auto-cast-type", required=True)
    args = ap.parse_args()
    config = step_common.load_config(args.config)
    spec = validate(
        CompileSpec,
        {
            **config["compile"],
            "buckets": args.buckets,
            "batch_size": args.batch_size,
            "auto_cast": args.auto_cast,
            "auto_cast_type": args.auto_cast_type,
        },
        source="pipeline parameters",
    )
    out = Path(args.out_dir)
    records = evaluation.read_records(step_common.one_file(args.data_dir, "*.jsonl"))
    with tempfile.TemporaryDirectory(prefix="smneuron-compile-") as tmp:
        compiled = compile_model(
            args.model_dir,
            Path(tmp) / "artifact",
            spec,
            cache=False,
            progress=lambda e: print(f"[compile] {e}", flush=True),
        )
        uploaded = stage(compiled.out_dir, name=config["model_name"], prefix=config["prefix"])
        reused = encoder.candidate_is_reference(spec)
        if reused:
            print("[compile] the reference: the candidate's own artifact (target cpu: compiling it again makes the "
                  "same graphs)", flush=True)  # fmt: skip
        reference = encoder.reference_outputs(
            args.model_dir, records, spec, Path(tmp) / "reference", candidate=compiled.out_dir
        )
    (out / "reference").mkdir(parents=True, exist_ok=True)
    (out / "requests").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(step_common.one_file(args.data_dir, "*.jsonl"), out / "reference" / "records.jsonl")
    evaluation.write_outputs(out / "reference" / "reference.jsonl", reference)
    (out / "requests" / "requests.jsonl").write_text(
        "\n".join(evaluation.request_lines(records, spec.task)) + "\n"
    )
    step_common.write_json(
        out / "result" / "compile.json",
        {
            "model_data": uploaded.uri,
            "sha256": uploaded.sha256,
            "skipped_upload": uploaded.skipped,
            "target": spec.target,
            "task": spec.task,
            "buckets": spec.buckets,
            "batch_size": spec.batch_size,
            "compiler": compiled.manifest.compiler.model_dump(),
            "records": len(records),
            "reference": "the candidate's artifact" if reused else "compiled for cpu",
        },
    )


if __name__ == "__main__":
    step_common.run(main)
