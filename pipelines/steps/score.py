"""Score step (after the Batch Transform on Neuron): candidate outputs vs the CPU reference.

Writes ``evaluation.json`` (the Evaluation property file the accuracy gate reads).
"""

from __future__ import annotations

from pathlib import Path

import step_common

from smneuron import evaluation


def main() -> None:
    ap = step_common.parser(__doc__)
    ap.add_argument("--reference-dir", required=True)
    ap.add_argument("--candidate-dir", required=True)
    ap.add_argument("--out-dir", required=True)
    step_common.add_thresholds(ap)
    args = ap.parse_args()
    config = step_common.load_config(args.config)
    ref_dir = Path(args.reference_dir)
    records = evaluation.read_records(ref_dir / "records.jsonl")
    result = evaluation.score(
        config["compile"]["task"],
        evaluation.read_outputs(ref_dir / "reference.jsonl"),
        evaluation.read_transform_output(step_common.one_file(args.candidate_dir, "*.out")),
        records,
        step_common.thresholds(args),
    )
    step_common.write_json(Path(args.out_dir) / evaluation.EVALUATION_FILE, result.to_json())


if __name__ == "__main__":
    main()
