"""Clients nobody here wrote, given nothing but what `smneuron local up` prints (issue 22 #1, #6, #9): plain boto3,
the AWS CLI and the SageMaker SDK v3 reach the embedded service, and a Model its ModelBuilder builds with the
user's own inference.py is served as the PyTorch DLC serves it (TorchServe + the SageMaker toolkit), custom attributes and
Accept included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import httpx
import pytest
from conftest import cmdline, listening, service_processes

pytestmark = pytest.mark.e2e  # the embedded service, TorchServe

INFERENCE = """
import json, os, torch

def model_fn(model_dir):
    return torch.jit.load(os.path.join(model_dir, "model.pt"))

def input_fn(body, content_type):
    return torch.tensor(json.loads(body), dtype=torch.float32)

def predict_fn(data, model):
    with torch.no_grad():
        return model(data)

def output_fn(prediction, accept, context):
    headers = context.request_processor[0].get_request_properties()
    attrs = next((v for k, v in headers.items() if k.lower() == "x-amzn-sagemaker-custom-attributes"), None)
    if attrs:
        context.set_response_header(0, "X-Amzn-SageMaker-Custom-Attributes", "seen=" + str(attrs))
    if accept == "text/csv":
        return "\\n".join(",".join(f"{v:.3f}" for v in row) for row in prediction.tolist()), accept
    return json.dumps(prediction.tolist()), "application/json"
"""

SDK = """
import json, sys
import sagemaker.core.helper.session_helper as waiting
from sagemaker.core.helper.session_helper import Session
# the SDK's deploy waits with its own waiter (DescribeEndpoint, the endpoint's CloudWatch logs) but sleeps 30 s before
# its first look (_wait_until); the same waiter looks every second here, as the suite has no 30 s to spare
waiting.EP_LOGGER_POLL = waiting.DEFAULT_EP_POLL = 1
from sagemaker.core.training.configs import SourceCode
from sagemaker.serve.model_builder import ModelBuilder

session = Session()  # nothing passed: the environment alone points it at the embedded service
uri = session.upload_data(sys.argv[1], key_prefix="user-model")
builder = ModelBuilder(
    image_uri="763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.1.0-cpu-py310",
    s3_model_data_url=uri, source_code=SourceCode(source_dir=sys.argv[2], entry_script="inference.py"),
    role_arn="arn:aws:iam::123456789012:role/smneuron-execution-role", sagemaker_session=session,
    instance_type="ml.c5.xlarge")
model = builder.build()  # checks the role with IAM SimulatePrincipalPolicy, then re-reads the Model
endpoint = builder.deploy(endpoint_name="sdk-ep", initial_instance_count=1, instance_type="ml.c5.xlarge")
answer = endpoint.invoke(body=json.dumps([[1.0, 2.0, 3.0, 4.0]]), content_type="application/json")
endpoint.refresh()
print("RESULT", json.dumps({"status": endpoint.endpoint_status, "answer": json.loads(answer.body.read()),
                  "env": model.primary_container.environment}))
"""


def _printed_environment(smneuron_cli, tmp_path) -> dict[str, str]:
    """What `local up` prints to export, as a shell takes it: its state in a folder with a space in its name (macOS's
    ~/Library/Application Support/smneuron), which the exports printed unquoted."""
    from conftest import SERVICE_STATES

    state = tmp_path / "Application Support" / "smneuron"
    smneuron_cli.env["SMNEURON_STATE_DIR"] = str(state)  # for every call, the fixture's `local down` too
    SERVICE_STATES.append(state)
    out = smneuron_cli("local", "up").stdout
    exports = "\n".join(line for line in out.splitlines() if line.startswith("export "))
    shell = subprocess.run(
        ["bash", "-c", f"{exports}\nenv -0"], env={}, capture_output=True, text=True, check=True
    )
    printed = dict(
        item.split("=", 1) for item in shell.stdout.split("\0") if item.startswith(("AWS_", "SM", "SAGE"))
    )
    assert printed["SAGEMAKER_USER_CONFIG_OVERRIDE"] == str(state / "sagemaker-config.yaml")
    # nothing else: no AWS config, no credentials file, a fresh HOME
    return {
        **printed,
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path / "home"),
    }


def test_boto3_the_aws_cli_and_the_sagemaker_sdk_with_only_the_printed_environment(smneuron_cli, tmp_path):
    import torch

    env = _printed_environment(smneuron_cli, tmp_path)
    up_pid = json.loads(smneuron_cli("local", "status", "--json").stdout)["pid"]
    assert {"AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID"} <= set(env)

    def run(*cmd: str) -> str:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, (cmd, out.stdout[-1500:], out.stderr[-3000:])
        return out.stdout

    # a user's own TorchScript model and inference.py, nothing of smneuron's
    torch.manual_seed(0)
    linear = torch.nn.Linear(4, 2)
    torch.jit.script(linear).save(str(tmp_path / "model.pt"))
    with tarfile.open(tmp_path / "model.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "model.pt", arcname="model.pt")
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "inference.py").write_text(INFERENCE)
    expected = linear(torch.tensor([[1.0, 2.0, 3.0, 4.0]])).tolist()

    out = run(sys.executable, "-c", SDK, str(tmp_path / "model.tar.gz"), str(tmp_path / "code"))
    # the SDK v3 prints the endpoint's CloudWatch log lines (TorchServe's, from the embedded logs) while it waits
    assert "RESULT " in out, out[-3000:]
    done = json.loads(out[out.index("RESULT ") + 7 :].splitlines()[0])
    assert done["status"] == "InService", done
    assert done["answer"][0] == pytest.approx(expected[0], abs=1e-5)  # the user's inference.py answered
    assert done["env"]["SAGEMAKER_PROGRAM"] == "inference.py"  # the SDK's Model, as ModelBuilder made it

    # the AWS CLI sees the same service: the endpoint, and the SDK's bucket (its S3 calls stayed local too)
    described = json.loads(
        run(sys.executable, "-m", "awscli", "sagemaker", "describe-endpoint", "--endpoint-name", "sdk-ep")
    )
    assert described["EndpointStatus"] == "InService"
    assert "sagemaker-us-east-1-123456789012" in run(sys.executable, "-m", "awscli", "s3", "ls")

    # plain boto3: custom attributes both ways, Accept on the streaming call
    script = """
import json, boto3
rt = boto3.client("sagemaker-runtime")
r = rt.invoke_endpoint(EndpointName="sdk-ep", Body=b"[[1, 2, 3, 4]]", ContentType="application/json",
                       CustomAttributes="trace=abc")
s = rt.invoke_endpoint_with_response_stream(EndpointName="sdk-ep", Body=b"[[1, 2, 3, 4]]",
                                            ContentType="application/json", Accept="text/csv")
streamed = b"".join(e["PayloadPart"]["Bytes"] for e in s["Body"] if "PayloadPart" in e).decode()
print(json.dumps({"attrs": r.get("CustomAttributes"), "body": json.loads(r["Body"].read()), "csv": streamed,
                  "endpoints": [e["EndpointName"] for e in boto3.client("sagemaker").list_endpoints()["Endpoints"]]}))
"""
    got = json.loads(run(sys.executable, "-c", script).splitlines()[-1])
    assert got["attrs"] == "seen=trace=abc"
    assert got["body"][0] == pytest.approx(expected[0], abs=1e-5)
    assert got["csv"] == ",".join(f"{v:.3f}" for v in expected[0])  # the container saw Accept: text/csv
    assert got["endpoints"] == ["sdk-ep"]
    # the DLC stack behind it answers only the service (issue 46 #3): TorchServe's own token authorization. Its two
    # HTTP APIs are where the service told the stack to listen (TS_INFERENCE_ADDRESS, TS_MANAGEMENT_ADDRESS in the
    # Java frontend's environment); each refuses a caller without the token, on each of its routes
    java = [
        p
        for p in service_processes(tmp_path / "Application Support" / "smneuron")
        if p != up_pid and "java" in cmdline(p)
    ]
    assert len(java) == 1, java
    told = dict(
        v.split("=", 1)
        for v in Path(f"/proc/{java[0]}/environ").read_bytes().decode().split("\0")
        if "=" in v
    )
    inference, management = told["TS_INFERENCE_ADDRESS"], told["TS_MANAGEMENT_ADDRESS"]
    assert {inference.rsplit(":", 1)[1], management.rsplit(":", 1)[1]} <= {
        a.rsplit(":", 1)[1] for a in listening(java)
    }
    for r in (httpx.post(f"{inference}/invocations", content=b"[[1, 2, 3, 4]]", timeout=10,
                         headers={"Content-Type": "application/json"}),
              httpx.post(f"{inference}/predictions/model", content=b"[[1, 2, 3, 4]]", timeout=10),
              httpx.get(f"{management}/models", timeout=10)):  # fmt: skip
        assert r.status_code in (400, 401, 403) and "Token Authorization failed" in r.text, (r.url, r.text)
    run(sys.executable, "-m", "awscli", "sagemaker", "delete-endpoint", "--endpoint-name", "sdk-ep")
    deadline = time.monotonic() + 60
    while [
        p for p in service_processes(tmp_path / "Application Support" / "smneuron") if p != up_pid
    ]:  # deleting it stops its model server
        assert time.monotonic() < deadline, "the model server outlived its endpoint"
        time.sleep(0.5)


SDK_V2 = """
import json, sys
import sagemaker
from sagemaker.deserializers import JSONDeserializer
from sagemaker.predictor import Predictor
from sagemaker.serializers import JSONSerializer

session = sagemaker.Session()  # nothing passed: the printed environment alone points it at the embedded service
predictor = Predictor("v2-ep", sagemaker_session=session, serializer=JSONSerializer(), deserializer=JSONDeserializer())
print("RESULT", json.dumps({"answer": predictor.predict({"inputs": ["a fine day"]}),
                            "bucket": session.default_bucket()}))
"""


@pytest.mark.skipif(
    not os.environ.get("SMNEURON_SDK2_PYTHON"),
    reason="the SageMaker SDK v2 cannot share an environment with v3: set SMNEURON_SDK2_PYTHON to a Python that has "
    "`sagemaker>=2.250,<3` (python -m venv .venv-sdk2 && .venv-sdk2/bin/pip install 'sagemaker<3')",
)
def test_the_sagemaker_sdk_v2_predictor_with_only_the_printed_environment(
    smneuron_cli, tiny_classifier, tmp_path
):
    """Issue 46: the SDK v2's Predictor (still what most notebooks use) signs its calls with the printed
    credentials and reaches a smneuron endpoint on the embedded SageMaker; with a wrong secret it is refused."""
    from smneuron.compilation.encoder import compile_model

    env = _printed_environment(smneuron_cli, tmp_path)
    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    smneuron_cli("--local", "deploy", str(tmp_path / "a"), "--instance", "ml.c6i.large", "--name", "v2-ep")
    python = os.environ["SMNEURON_SDK2_PYTHON"]
    out = subprocess.run([python, "-c", SDK_V2], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "RESULT " in out.stdout, out.stderr[-3000:]
    got = json.loads(out.stdout[out.stdout.index("RESULT ") + 7 :].splitlines()[0])
    assert got["answer"][0]["label"] and got["bucket"] == "sagemaker-us-east-1-123456789012"
    wrong = subprocess.run([python, "-c", SDK_V2], env={**env, "AWS_SECRET_ACCESS_KEY": "x" * 40},
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    said = " ".join((wrong.stdout + wrong.stderr).split())  # the SDK v2 prints its traceback with rich
    assert wrong.returncode != 0 and "(InvalidSignatureException) when calling the InvokeEndpoint" in said, (
        said[-2000:]
    )
