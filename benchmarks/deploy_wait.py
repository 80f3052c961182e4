"""Wall time of `smneuron deploy` (the CLI, as a user runs it) against the embedded AWS, before and after
the corridor redesign, and of the SageMaker SDK's `PyTorchModel.deploy(wait=True)` on the same endpoint
delay (endpoints stay Creating for --create-seconds; real ones take minutes).

    python benchmarks/deploy_wait.py [--create-seconds 5] [--before-rev c3495a9]

"before" runs smneuron at --before-rev from a git worktree (same venv): its deploy imported the
SageMaker SDK (~5 s) to create the Model. "after" creates it with boto3. The SDK polls every 30 s;
smneuron's waiter polls after 1, 1.6, 2.6 ... s (capped at 20 s).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")  # the SDK comparison below needs no nag


def cli_deploy(tree: Path, url: str, artifact: Path, name: str, env: dict[str, str]) -> float:
    cmd = [
        sys.executable,
        "-m",
        "smneuron.cli.main",
        "--endpoint-url",
        url,
        "--region",
        "us-east-1",
        "deploy",
        str(artifact),
        "--instance",
        "ml.c6i.xlarge",
        "--name",
        name,
        "--json",
    ]
    t = time.perf_counter()
    out = subprocess.run(cmd, cwd=tree, env={**env, "PYTHONPATH": str(tree)}, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"{name} failed: {out.stderr[-1500:]}")
    assert json.loads(out.stdout)["status"] == "InService"
    return seconds


def main() -> None:
    from smneuron.artifact.staging import stage
    from smneuron.compilation.encoder import compile_model
    from smneuron.local.aws.engine.embedded import (
        create_sagemaker_role,
        embedded_aws,
        local_credentials,
        set_endpoint_delay,
    )
    from smneuron.local.tiny_model import build_tiny_bert
    from smneuron.session import Session

    ap = argparse.ArgumentParser()
    ap.add_argument("--create-seconds", type=float, default=5)
    ap.add_argument("--before-rev", default="c3495a9")
    args = ap.parse_args()
    delay = args.create_seconds
    with tempfile.TemporaryDirectory() as tmp, embedded_aws() as url, local_credentials(url):
        work = Path(tmp)
        art = work / "a"
        compile_model(
            build_tiny_bert(work / "m"), art, target="cpu", task="text-classification", buckets="16"
        )
        session = Session.from_env(region="us-east-1", endpoint_url=url)
        create_sagemaker_role(session)
        set_endpoint_delay(delay)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SMNEURON_", "AWS_PROFILE"))}
        env.update(SMNEURON_CACHE_DIR=str(work / "cache"), SAGEMAKER_SUPPRESS_V2_WARNING="1")
        before_tree = work / "before"
        subprocess.run(
            ["git", "worktree", "add", "-f", "--detach", str(before_tree), args.before_rev],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        try:
            before = cli_deploy(before_tree, url, art, "before", env)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(before_tree)], cwd=REPO, capture_output=True
            )
        after = cli_deploy(REPO, url, art, "after", env)

        data = stage(art, session=session, name="sdk")
        from smneuron.deployment.corridor import preview
        from smneuron.specs.models import EndpointSpec

        p = preview(data.uri, EndpointSpec(name="via-sdk", instance_type="ml.c6i.xlarge"), session=session)
        t = time.perf_counter()
        import sagemaker
        from sagemaker.pytorch import PyTorchModel

        sm_session = sagemaker.Session(
            boto_session=session.boto_session,
            sagemaker_client=session.client("sagemaker"),
            sagemaker_runtime_client=session.client("sagemaker-runtime"),
            default_bucket=session.bucket_name,
        )
        model = PyTorchModel(
            model_data=data.uri,
            image_uri=p.image_uri,
            role=session.role_arn,
            env=p.environment,
            framework_version="2.6.0",
            py_version="py312",
            sagemaker_session=sm_session,
            code_location=f"s3://{session.bucket_name}/sdk",
        )
        model.deploy(
            initial_instance_count=1, instance_type="ml.c6i.xlarge", endpoint_name="via-sdk", wait=True
        )
        sdk = time.perf_counter() - t
    print(f"endpoint creation simulated at {delay:.0f} s; wall time of one deploy of a tiny cpu artifact")
    print(f"smneuron deploy CLI, before ({args.before_rev}, SDK Model)  {before:7.1f} s")
    print(
        f"smneuron deploy CLI, after (boto3 Model)            {after:7.1f} s   ({before / after:.2f}x faster)"
    )
    print(
        f"PyTorchModel.deploy(wait=True), in process (import incl.) {sdk:7.1f} s   ({sdk / after:.2f}x smneuron's)"
    )


if __name__ == "__main__":
    main()
