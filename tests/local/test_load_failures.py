"""A model that cannot load is Failed fast, with the exception in FailureReason and the traceback in the logs.

SageMaker takes many minutes and says only "did not pass the ping health check"; the embedded SageMaker exists
to answer faster and clearer. Two ways in: a Model made the SageMaker SDK way (the DLC's TorchServe stack runs its
``inference.py``, whose ``model_fn`` raises) and a smneuron artifact whose weights file is broken.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
import time

import boto3
import pytest
from conftest import local_kw, until

import smneuron

pytestmark = pytest.mark.e2e

INFERENCE = """
def model_fn(model_dir):
    raise RuntimeError("weights file model.pth is corrupt: expected 42 tensors, found 0")


def predict_fn(data, model):
    return data
"""


def _clients(url: str) -> tuple:
    kw = local_kw(url)
    return boto3.client("sagemaker", **kw), boto3.client("s3", **kw), boto3.client("logs", **kw)


def _failed(sm, name: str) -> tuple[dict, float]:
    started = time.monotonic()
    # polled well past the ~10-20 s a failed load takes here, and far short of TorchServe's 300 s start limit
    described = until(
        lambda: (d := sm.describe_endpoint(EndpointName=name))["EndpointStatus"] != "Creating" and d,
        f"{name} to leave Creating",
        timeout=150,
    )
    return described, time.monotonic() - started


def test_a_model_fn_that_raises_fails_the_endpoint_with_its_exception(
    smneuron_cli, tiny_encoder, tiny_llama, tmp_path, optimum_standin, llama_8b, monkeypatch
):
    smneuron_cli("local", "up")
    url = json.loads(smneuron_cli("local", "status", "--json").stdout)["url"]
    sm, s3, logs = _clients(url)

    # the SageMaker SDK's way: a tarball with code/inference.py, the PyTorch DLC image, its environment
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "inference.py").write_text(INFERENCE)
    with tarfile.open(tmp_path / "model.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "code", arcname="code")
    s3.create_bucket(Bucket="models")
    s3.upload_file(str(tmp_path / "model.tar.gz"), "models", "broken/model.tar.gz")
    image = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.5-cpu-py311"
    sm.create_model(
        ModelName="broken",
        ExecutionRoleArn="arn:aws:iam::123456789012:role/smneuron-execution-role",
        PrimaryContainer={
            "Image": image,
            "ModelDataUrl": "s3://models/broken/model.tar.gz",
            "Environment": {
                "SAGEMAKER_PROGRAM": "inference.py",
                "SAGEMAKER_SUBMIT_DIRECTORY": "/opt/ml/model/code",
            },
        },
    )
    variant = {"VariantName": "AllTraffic", "ModelName": "broken", "InstanceType": "ml.c6i.large"}
    sm.create_endpoint_config(
        EndpointConfigName="broken", ProductionVariants=[{**variant, "InitialInstanceCount": 1}]
    )
    sm.create_endpoint(EndpointName="broken", EndpointConfigName="broken")
    described, seconds = _failed(sm, "broken")
    print(f"Failed after {seconds:.1f} s")  # measured for the record, not asserted (-s shows it)
    reason = described["FailureReason"]
    assert described["EndpointStatus"] == "Failed"
    assert "did not pass the ping health check" in reason and "The model failed to load" in reason
    assert "RuntimeError: weights file model.pth is corrupt: expected 42 tensors, found 0" in reason
    assert "inference.py" in reason and "in model_fn" in reason and len(reason) <= 1024
    status = smneuron_cli("--local", "status", "broken", check=False).stdout
    assert "Failed" in status and "weights file model.pth is corrupt" in status
    events = until(
        lambda: logs.filter_log_events(logGroupName="/aws/sagemaker/Endpoints/broken")["events"],
        "the model server's log lines",
        timeout=60,
    )
    text = "\n".join(e["message"] for e in events)
    assert "Traceback (most recent call last)" in text and "in model_fn" in text  # the whole traceback

    # smneuron's own artifact with a broken weights file: the same, through `smneuron deploy`
    art = tmp_path / "art"
    smneuron.compile(tiny_encoder, art, target="cpu", task="feature-extraction", buckets="16")
    (art / "weights.pt").unlink()  # (not written through: the compile cache shares the file by hard link)
    (art / "weights.pt").write_bytes(b"not a torch file")
    # a consistently broken artifact: its manifest names these bytes (a changed file alone is refused at packaging)
    manifest = json.loads((art / "smneuron.json").read_text())
    manifest["weights"]["sha256"] = hashlib.sha256(b"not a torch file").hexdigest()
    (art / "smneuron.json").write_text(json.dumps(manifest))
    out = smneuron_cli(
        "--local", "deploy", str(art), "--instance", "ml.c6i.large", "--name", "broken-weights", check=False
    )
    assert out.returncode == 1 and "did not pass the ping health check" in out.stderr
    assert "could not load the model" in out.stderr and "UnpicklingError" in out.stderr

    # a text-generation copy whose weights are broken: the component fails, and the error names both it and the
    # endpoint that `status` and `delete` take
    llm = tmp_path / "llm"
    smneuron.compile(tiny_llama, llm, target="cpu", task="text-generation", sequence_length=256, batch_size=2)
    manifest = json.loads((llm / "smneuron.json").read_text())
    for weights in llm.glob("*.safetensors"):
        weights.unlink()
        weights.write_bytes(b"garbage")
        manifest["model_files"][weights.name] = hashlib.sha256(b"garbage").hexdigest()  # consistently broken
    (llm / "smneuron.json").write_text(json.dumps(manifest))
    out = smneuron_cli(
        "--local", "deploy", str(llm), "--instance", "ml.c6i.xlarge", "--name", "chat", check=False
    )
    assert out.returncode == 1 and "of endpoint 'chat' is Failed" in out.stderr
    assert "SafetensorError" in out.stderr
    assert "`smneuron --local status chat`" in out.stderr  # the hint as it is pasted

    # an inf2 export made by another neuronx-cc, staged, and made a Model with boto3 (no smneuron preflight on this path): the
    # stand-in of the vLLM container refuses it with optimum-neuron's own words (NeuronConfig.from_dict, v0.4.5),
    # and the inference component's FailureReason says which version did not match
    from smneuron.compilation.generation import CompileSpec, compile_generation

    monkeypatch.setenv("SMNEURON_STANDIN_NEURONXCC", "2.22.1.0")
    spec = CompileSpec(
        task="text-generation", target="inf2", batch_size=4, sequence_length=4096, tensor_parallel_size=2
    )
    export = compile_generation(llama_8b, tmp_path / "export", spec).out_dir
    from smneuron.artifact.staging import stage
    from smneuron.session import Session

    monkeypatch.setenv(
        "SMNEURON_STATE_DIR", str(tmp_path / "state")
    )  # the service's credentials, as the CLI finds them
    staged = stage(export, session=Session.embedded(url))
    vllm = (
        "763104351884.dkr.ecr.us-east-1.amazonaws.com/"
        "huggingface-vllm-inference-neuronx:0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04"
    )
    role = "arn:aws:iam::123456789012:role/smneuron-execution-role"
    source = {"S3Uri": staged.uri, "S3DataType": "S3Prefix", "CompressionType": "None"}
    sm.create_model(ModelName="export", ExecutionRoleArn=role, PrimaryContainer={
        "Image": vllm, "ModelDataSource": {"S3DataSource": source},
        "Environment": {"SM_ON_MODEL": "/opt/ml/model", "SM_ON_BATCH_SIZE": "4", "SM_ON_SEQUENCE_LENGTH": "4096",
                        "SM_ON_TENSOR_PARALLEL_SIZE": "2"},
    })  # fmt: skip
    sm.create_endpoint_config(EndpointConfigName="gen", ExecutionRoleArn=role, ProductionVariants=[{
        "VariantName": "AllTraffic", "InstanceType": "ml.inf2.8xlarge", "InitialInstanceCount": 1,
        "ManagedInstanceScaling": {"Status": "ENABLED", "MinInstanceCount": 1, "MaxInstanceCount": 1},
        "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
    }])  # fmt: skip
    sm.create_endpoint(EndpointName="gen", EndpointConfigName="gen")
    until(
        lambda: sm.describe_endpoint(EndpointName="gen")["EndpointStatus"] == "InService",
        "gen InService",
        120,
    )
    sm.create_inference_component(
        InferenceComponentName="gen-ic", EndpointName="gen", VariantName="AllTraffic",
        Specification={"ModelName": "export", "ComputeResourceRequirements": {
            "NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 1024}},
        RuntimeConfig={"CopyCount": 1},
    )  # fmt: skip
    component = until(
        lambda: (
            (d := sm.describe_inference_component(InferenceComponentName="gen-ic"))[
                "InferenceComponentStatus"
            ]
            not in ("Creating", "Updating")
            and d
        ),
        "the component to leave Creating",
        timeout=120,
    )
    assert component["InferenceComponentStatus"] == "Failed"
    assert (
        "exported using version 2.22.1.0 of the neuronxcc compiler, but 2.21.33363.0 is installed"
        in component["FailureReason"]
    ), component["FailureReason"]
