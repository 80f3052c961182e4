"""Deploy step (after the accuracy gate passed): serve the Model that CreateModel made, by name.

That Model is the one the Transform (or staging endpoint) evaluated and the Register step
registered, so what was evaluated and approved is exactly what serves: no second Model is created.
Blue/green update with auto-rollback alarms, autoscaling and tags exactly as `smneuron deploy` does
them. Writes ``deployment.json``.
"""

from __future__ import annotations

from pathlib import Path

import step_common

from smneuron.deployment.corridor import deploy_model_name
from smneuron.session import Session
from smneuron.specs.models import EndpointSpec, ScalingSpec, validate


def main() -> None:
    args = step_common.serving_args(__doc__)
    config = step_common.load_config(args.config)
    spec = validate(
        EndpointSpec,
        {**config["endpoint"], "name": args.endpoint_name, "instance_type": args.instance_type},
        source="pipeline parameters",
    )
    scaling = validate(ScalingSpec, config["scaling"], source="pipeline config")
    session = Session.from_env()
    result = deploy_model_name(
        args.model_name,
        spec,
        scaling,
        session=session,
        on_status=lambda s, t: print(f"[deploy] {s} after {t:.0f} s", flush=True),
    )
    sm = session.client("sagemaker")
    config_name = sm.describe_endpoint(EndpointName=result.endpoint_name)["EndpointConfigName"]
    served = sm.describe_endpoint_config(EndpointConfigName=config_name)["ProductionVariants"][0]["ModelName"]
    container = sm.describe_model(ModelName=served)["PrimaryContainer"]
    step_common.write_json(
        Path(args.out_dir) / "deployment.json",
        {
            **result.to_dict(),
            "served_model_name": served,
            "model_data": container.get("ModelDataUrl"),
            "models_created": [c for c in result.created if c.startswith("model ")],
        },
    )


if __name__ == "__main__":
    step_common.run(main)
