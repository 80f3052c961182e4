"""RemoveStaging: runs only when the staging evaluation failed (a job stopped by its time limit never
reaches its own cleanup). Deletes this execution's staging endpoint, its components and config, if any."""

from __future__ import annotations

import step_common

from smneuron.endpoints.handle import delete
from smneuron.session import Session


def main() -> None:
    ap = step_common.parser(__doc__)
    ap.add_argument("--kind", choices=["endpoint", "component"], required=True)
    ap.add_argument("--execution-id", required=True)
    args = ap.parse_args()
    name = step_common.staging_name(args.execution_id)
    removed = delete(name, session=Session.from_env())
    print(f"[cleanup] {', '.join(removed) if removed else f'nothing of {name} was left'}", flush=True)


if __name__ == "__main__":
    step_common.run(main)
