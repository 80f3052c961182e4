"""Compile step of the text-generation pipeline: the served artifact, and the reference on CPU.

The artifact: ``optimum-cli export neuron`` (smneuron's ``compile_generation``) on this CPU instance inside the
vLLM Neuron DLC, or, with ``--artifact-s3-uri``, an artifact compiled before (``smneuron upload``):
optimum-neuron's decoder export on a machine without a Neuron device is not something its maintainers
document (their CPU compilation work covers encoders), so a team that compiles elsewhere passes its
artifact and the pipeline checks it against the project's compile settings.
The reference: transformers' greedy continuations and per-token log-probabilities of the evaluation texts
(fp32, CPU), and the tokenizer the scorer compares continuations with.

Outputs: ``result/compile.json`` (model_data, ...: the CompileResult property file) and ``reference/``.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import step_common

from smneuron.artifact.staging import stage
from smneuron.compilation.entry import compile_model
from smneuron.evaluation import generation
from smneuron.evaluation import scoring as evaluation
from smneuron.specs.models import CompileSpec, validate


def main() -> None:
    ap = step_common.parser(__doc__)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--artifact-s3-uri", default="none", help='"none": compile from --model-dir')
    ap.add_argument("--max-new-tokens", type=int, required=True)
    args = ap.parse_args()
    config = step_common.load_config(args.config)
    spec = validate(CompileSpec, config["compile"], source="pipeline config")
    out = Path(args.out_dir)
    data_file = step_common.one_file(args.data_dir, "*.jsonl")
    records = evaluation.read_records(data_file)
    with tempfile.TemporaryDirectory(prefix="smneuron-compile-") as tmp:
        if args.artifact_s3_uri.strip().lower() in ("", "none"):
            compiled = compile_model(args.model_dir, Path(tmp) / "artifact", spec)
            for note in compiled.notes:
                print(f"[compile] {note}", flush=True)
            staged = stage(
                compiled.out_dir, name=config["model_name"], prefix=config["prefix"], compression="none"
            )
            source = "compiled " + " ".join(compiled.command[3:]) if compiled.command else "prepared for cpu"
        else:
            staged = stage(args.artifact_s3_uri, upload=False)
            step_common.check_generation_matches(staged, spec)
            source = f"precompiled artifact {args.artifact_s3_uri}"
        print(f"[compile] model data {staged.uri} ({source})", flush=True)
        reference = generation.reference_outputs(
            args.model_dir, records, args.max_new_tokens, out / "reference"
        )
    (out / "reference").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(data_file, out / "reference" / "records.jsonl")
    evaluation.write_outputs(out / "reference" / "reference.jsonl", reference)
    g = staged.generation
    step_common.write_json(
        out / "result" / "compile.json",
        {
            "model_data": staged.uri,
            "sha256": staged.sha256,
            "source": source,
            "target": staged.target,
            "task": "text-generation",
            "generation": {
                "batch_size": g.batch_size,
                "sequence_length": g.sequence_length,
                "tensor_parallel_size": g.tensor_parallel_size,
                "dtype": g.dtype,
            }
            if g
            else None,
            "records": len(records),
        },
    )


if __name__ == "__main__":
    step_common.run(main)
