"""Wall time of `smneuron deploy` vs the SageMaker SDK's `PyTorchModel.deploy(wait=True)` against the
same embedded AWS, with endpoints that stay Creating for --create-seconds (real ones take minutes).

The SDK polls every 30 s; smneuron's waiter polls after 1, 1.6, 2.6 ... s (capped at 20 s).

    python benchmarks/deploy_wait.py [--create-seconds 8]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from smneuron.compile import compile_model
from smneuron.deploy import deploy
from smneuron.local.fake_aws import embedded_aws, set_endpoint_delay
from smneuron.local.tiny_model import build_tiny_bert
from smneuron.packaging import package
from smneuron.session import Session
from smneuron.specs import EndpointSpec
from smneuron.storage import upload


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--create-seconds", type=float, default=8)
    delay = ap.parse_args().create_seconds
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")
    with tempfile.TemporaryDirectory() as tmp, embedded_aws() as url:
        work = Path(tmp)
        compile_model(
            build_tiny_bert(work / "m"), work / "a", target="cpu", task="text-classification", buckets="16"
        )
        tarball = package(work / "a", work / "model.tar.gz").path
        session = Session.from_env(region="us-east-1", endpoint_url=url)
        session.client("iam").create_role(RoleName="smneuron-execution-role", AssumeRolePolicyDocument="{}")
        uri = upload(tarball, model_name="bench", session=session).uri
        set_endpoint_delay(delay)

        t = time.perf_counter()
        r = deploy(uri, EndpointSpec(name="via-smneuron", instance_type="ml.c6i.xlarge"), session=session)
        ours = time.perf_counter() - t

        import sagemaker
        from sagemaker.pytorch import PyTorchModel

        sm_session = sagemaker.Session(
            boto_session=session.boto_session,
            sagemaker_client=session.client("sagemaker"),
            sagemaker_runtime_client=session.client("sagemaker-runtime"),
            default_bucket=session.bucket_name,
        )
        model = PyTorchModel(
            model_data=uri,
            image_uri=r.plan.image_uri,
            role=session.role_arn,
            env=r.plan.environment,
            framework_version="2.6.0",
            py_version="py312",
            sagemaker_session=sm_session,
            code_location=f"s3://{session.bucket_name}/sdk",
        )
        t = time.perf_counter()
        model.deploy(
            initial_instance_count=1, instance_type="ml.c6i.xlarge", endpoint_name="via-sdk", wait=True
        )
        sdk = time.perf_counter() - t
    print(f"endpoint creation simulated at {delay:.0f} s")
    print(f"smneuron deploy (own waiter)        {ours:7.1f} s")
    print(f"PyTorchModel.deploy(wait=True)      {sdk:7.1f} s")
    print(f"ratio SDK / smneuron                {sdk / ours:7.2f}x")


if __name__ == "__main__":
    main()
