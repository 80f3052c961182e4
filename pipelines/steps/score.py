"""Score step (after the Batch Transform on Neuron): candidate outputs vs the CPU reference.

Writes ``evaluation.json`` (the Evaluation property file the accuracy gate reads).
"""

from __future__ import annotations

import step_common

from smneuron.evaluation import scoring as evaluation


def main() -> None:
    ap = step_common.parser(__doc__)
    ap.add_argument("--reference-dir", required=True)
    ap.add_argument("--candidate-dir", required=True)
    ap.add_argument("--out-dir", required=True)
    step_common.add_thresholds(ap)
    args = ap.parse_args()
    config = step_common.load_config(args.config)
    candidate = evaluation.read_transform_output(step_common.one_file(args.candidate_dir, "*.out"))
    step_common.score_and_write(
        args, config["compile"]["task"], candidate, step_common.reference_records(args)
    )


if __name__ == "__main__":
    step_common.run(main)
