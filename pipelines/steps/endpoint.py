"""EnsureEndpoint (text generation, after the gate passed): the endpoint the component goes on.

Creates the endpoint config and endpoint of the plan `smneuron deploy` makes for this Model (managed
instance scaling, the Neuron AMI, volume sized from the model) only when the endpoint does not exist;
an existing endpoint is left as it is (its components are the DeployComponent step's business).
Writes ``endpoint.json``: the component's compute requirements, timeouts and copy count, which the
InferenceComponentStep reads.
"""

from __future__ import annotations

from pathlib import Path

import step_common

from smneuron.endpoints.handle import describe, wait_for_endpoint


def main() -> None:
    ap = step_common.parser(__doc__)
    ap.add_argument("--model-name", required=True)
    ap.add_argument("--endpoint-name", required=True)
    ap.add_argument("--instance-type", required=True)
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args()
    config = step_common.load_config(args.config)
    session, plan = step_common.component_plan(
        config, args.model_name, args.endpoint_name, args.instance_type
    )
    sm = session.client("sagemaker")
    created = describe(session, plan.endpoint_name) is None
    if created:
        sm.create_endpoint_config(**plan.endpoint_config_request(session.role_arn))
        sm.create_endpoint(
            EndpointName=plan.endpoint_name,
            EndpointConfigName=plan.endpoint_config_name,
            Tags=plan.tag_list(),
        )
        wait_for_endpoint(
            plan.endpoint_name,
            session=session,
            timeout=3600,
            on_status=lambda s, t: print(f"[endpoint] {s} after {t:.0f} s", flush=True),
        )
    compute = plan.component_request()["Specification"]["ComputeResourceRequirements"]
    step_common.write_json(
        Path(args.out_dir) / "endpoint.json",
        {
            "endpoint_name": plan.endpoint_name,
            "created": created,
            "copies": plan.copies,
            "accelerators": compute.get("NumberOfAcceleratorDevicesRequired"),
            "cpu_cores": compute.get("NumberOfCpuCoresRequired"),
            "memory_mb": compute["MinMemoryRequiredInMb"],
            "download_timeout": plan.download_timeout,
            "startup_timeout": plan.startup_timeout,
        },
    )


if __name__ == "__main__":
    main()
