"""Staging evaluation of encoders on ml.inf1 (which Batch Transform does not accept): a short-lived endpoint.

Creates an endpoint for the candidate Model on the target instance, sends every evaluation record,
deletes the staging endpoint and its config whatever happened, and scores the answers against the CPU
reference. Writes ``evaluation.json``.
"""

from __future__ import annotations

import step_common

from smneuron.endpoints.handle import Endpoint
from smneuron.evaluation import scoring as evaluation


def main() -> None:
    ap = step_common.parser(__doc__)
    ap.add_argument("--model-name", required=True)
    ap.add_argument("--instance-type", required=True)
    ap.add_argument("--execution-id", required=True)
    ap.add_argument("--reference-dir", required=True)
    ap.add_argument("--out-dir", required=True)
    step_common.add_thresholds(ap)
    args = ap.parse_args()
    config = step_common.load_config(args.config)
    task = config["compile"]["task"]
    records = step_common.reference_records(args)
    with step_common.staging(config, args, kind="endpoint") as name:
        endpoint = Endpoint(name)
        candidate = evaluation.collect(lambda body: endpoint.invoke(body).body, records, task)
    step_common.score_and_write(args, task, candidate, records)


if __name__ == "__main__":
    step_common.run(main)
