"""Staging evaluation (ml.inf1, which Batch Transform does not accept): a short-lived endpoint.

Creates an endpoint for the candidate Model on the target instance, sends every evaluation record,
scores the answers against the CPU reference, and deletes the endpoint and its config whatever
happened. Writes ``evaluation.json``.
"""

from __future__ import annotations

import json

import step_common

from smneuron.endpoints.handle import Endpoint, wait_for_endpoint
from smneuron.endpoints.naming import sanitize
from smneuron.evaluation import scoring as evaluation
from smneuron.session import Session


def main() -> None:
    ap = step_common.parser(__doc__)
    ap.add_argument("--model-name", required=True)
    ap.add_argument("--instance-type", required=True)
    ap.add_argument("--reference-dir", required=True)
    ap.add_argument("--out-dir", required=True)
    step_common.add_thresholds(ap)
    args = ap.parse_args()
    config = step_common.load_config(args.config)
    task = config["compile"]["task"]
    records = step_common.reference_records(args)
    session = Session.from_env()
    sm = session.client("sagemaker")
    name = sanitize(f"smneuron-staging-{args.model_name}")
    tags = [{"Key": "smneuron:endpoint", "Value": name}, {"Key": "smneuron:staging", "Value": "true"}]
    sm.create_endpoint_config(
        EndpointConfigName=name,
        Tags=tags,
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": args.model_name,
                "InitialInstanceCount": 1,
                "InstanceType": args.instance_type,
                "ContainerStartupHealthCheckTimeoutInSeconds": 1800,
                "ModelDataDownloadTimeoutInSeconds": 1800,
            }
        ],
    )
    try:
        sm.create_endpoint(EndpointName=name, EndpointConfigName=name, Tags=tags)
        wait_for_endpoint(name, session=session, timeout=3600)
        endpoint = Endpoint(name, session=session)
        candidate = evaluation.collect(lambda body: endpoint.invoke(body).body, records, task)
    finally:
        for delete, kw in (
            (sm.delete_endpoint, {"EndpointName": name}),
            (sm.delete_endpoint_config, {"EndpointConfigName": name}),
        ):
            try:
                delete(**kw)
            except Exception as e:
                print(f"could not delete staging resource {json.dumps(kw)}: {e}", flush=True)
    step_common.score_and_write(args, task, candidate, records)


if __name__ == "__main__":
    main()
