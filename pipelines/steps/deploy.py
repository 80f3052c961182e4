"""Deploy step (after the accuracy gate passed): smneuron's own deploy of the candidate artifact.

Blue/green update with auto-rollback alarms, autoscaling and tags exactly as `smneuron deploy`
does them. Writes ``deployment.json``.
"""

from __future__ import annotations

from pathlib import Path

import step_common

from smneuron.deploy import deploy
from smneuron.specs import EndpointSpec, ScalingSpec, validate


def main() -> None:
    ap = step_common.parser(__doc__)
    ap.add_argument("--model-data", required=True)
    ap.add_argument("--endpoint-name", required=True)
    ap.add_argument("--instance-type", required=True)
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args()
    config = step_common.load_config(args.config)
    spec = validate(EndpointSpec, {**config["endpoint"], "name": args.endpoint_name,
                                   "instance_type": args.instance_type}, source="pipeline parameters")  # fmt: skip
    scaling = validate(ScalingSpec, config["scaling"], source="pipeline config")
    result = deploy(args.model_data, spec, scaling, model_name=config["model_name"],
                    on_status=lambda s, t: print(f"[deploy] {s} after {t:.0f} s", flush=True))  # fmt: skip
    step_common.write_json(Path(args.out_dir) / "deployment.json", {
        "endpoint_name": result.endpoint_name, "status": result.status, "model_name": result.model_name,
        "endpoint_config_name": result.endpoint_config_name, "model_data": result.model_data,
        "unchanged": result.unchanged, "update": result.plan.is_update,
    })  # fmt: skip


if __name__ == "__main__":
    main()
