"""Deploy (text generation, after the gate passed): serve the evaluated Model as the endpoint's component, exactly
as `smneuron deploy` does (``deployment.apply`` on the plan of ``deployment.corridor.generation_plan_for_model``).

The endpoint is created when missing; a new Model rolls onto the copies batch by batch with the endpoint's 5XX alarm
as auto-rollback, so a scheduled redeploy of a worse model never takes every copy down at once; copy autoscaling from
the project file (min / max copies, the target) is registered and reconciled on every run. A rolled-back update fails
this step with the alarm's name while the old copies keep serving. Writes ``deployment.json``.
"""

from __future__ import annotations

from pathlib import Path

import step_common

from smneuron.deployment.apply import apply


def main() -> None:
    args = step_common.serving_args(__doc__)
    config = step_common.load_config(args.config)
    session, plan = step_common.component_plan(
        config, args.model_name, args.endpoint_name, args.instance_type
    )
    result = apply(
        plan,
        session=session,
        timeout=3600,
        on_status=lambda s, t: print(f"[deploy] {s} after {t:.0f} s", flush=True),
    )
    scaling = plan.scaling
    step_common.write_json(
        Path(args.out_dir) / "deployment.json",
        {
            **result.to_dict(),
            "component_name": plan.component_name,
            "served_model_name": plan.model_name,
            "rolling_batches": plan.batches,
            "copy_autoscaling": {"min": scaling.min_capacity, "max": scaling.max_capacity}
            if scaling.enabled
            else None,
        },
    )


if __name__ == "__main__":
    step_common.run(main)
