"""The embedded SageMaker's answers, held against botocore's service model (tests/contract.py).

Every SageMaker operation the embedded SageMaker answers (moto's and those smneuron adds or replaces) is called
the way its clients call it: smneuron (deploy, status, scale, delete, components), the SageMaker SDK (Describe*,
List*, UpdateEndpoint), boto3 and the AWS CLI. Each raw answer must fit the operation's output shape, and each
error must be a code the operation can answer with AWS's HTTP status.
"""

from __future__ import annotations

import json

import boto3
import pytest
from contract import Recorder, error_problems, response_problems, service_model

from smneuron.local.aws.engine import patching

ROLE = "arn:aws:iam::123456789012:role/smneuron-execution-role"
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.5-cpu-py311"

# operation -> who calls it (the clients held against it; listed in docs/architecture.md)
ANSWERED = {
    "CreateModel": "smneuron deploy, SageMaker SDK, boto3",
    "DescribeModel": "smneuron status/deploy, SageMaker SDK",
    "ListModels": "smneuron delete, boto3",
    "DeleteModel": "smneuron delete, SageMaker SDK",
    "CreateEndpointConfig": "smneuron deploy, SageMaker SDK",
    "DescribeEndpointConfig": "smneuron status/deploy, SageMaker SDK",
    "ListEndpointConfigs": "smneuron delete, boto3",
    "DeleteEndpointConfig": "smneuron delete, SageMaker SDK",
    "CreateEndpoint": "smneuron deploy, SageMaker SDK, AWS CLI",
    "DescribeEndpoint": "every waiter: smneuron, SageMaker SDK, AWS CLI",
    "ListEndpoints": "smneuron list, AWS CLI",
    "UpdateEndpoint": "smneuron deploy (blue/green), SageMaker SDK (added: moto lacks it)",
    "UpdateEndpointWeightsAndCapacities": "smneuron scale (pinned counts)",
    "DeleteEndpoint": "smneuron delete, SageMaker SDK, AWS CLI",
    "CreateInferenceComponent": "smneuron deploy (text generation; added)",
    "DescribeInferenceComponent": "smneuron status/deploy (added)",
    "ListInferenceComponents": "smneuron status/delete (added)",
    "UpdateInferenceComponent": "smneuron deploy (added)",
    "UpdateInferenceComponentRuntimeConfig": "smneuron scale (added)",
    "DeleteInferenceComponent": "smneuron delete (added)",
    "ListPipelineExecutionSteps": "smneuron pipeline status (added)",
    "CreateAIWorkloadConfig": "smneuron bench --in-account (added)",
    "DescribeAIWorkloadConfig": "boto3, AWS CLI (added)",
    "ListAIWorkloadConfigs": "boto3 (added)",
    "DeleteAIWorkloadConfig": "smneuron bench --in-account (added)",
    "CreateAIBenchmarkJob": "smneuron bench --in-account (added)",
    "DescribeAIBenchmarkJob": "smneuron bench --in-account (added)",
    "ListAIBenchmarkJobs": "boto3 (added)",
    "StopAIBenchmarkJob": "smneuron bench --in-account on Ctrl-C (added)",
    "DeleteAIBenchmarkJob": "boto3 (added)",
    "AddTags": "smneuron deploy (ownership tags)",
    "ListTags": "smneuron delete (ownership by tag)",
}


def _exercise(sm) -> None:  # type: ignore[no-untyped-def]
    """Each operation in ANSWERED, on the success path and on the error paths a client meets."""
    container = {"Image": IMAGE, "ModelDataUrl": "s3://b/m/model.tar.gz", "Environment": {"A": "1"}}
    sm.create_model(
        ModelName="m1", ExecutionRoleArn=ROLE, PrimaryContainer=container, Tags=[{"Key": "k", "Value": "v"}]
    )
    sm.describe_model(ModelName="m1")
    sm.list_models()
    variant = {
        "VariantName": "AllTraffic",
        "ModelName": "m1",
        "InstanceType": "ml.inf2.xlarge",
        "InitialInstanceCount": 1,
    }
    sm.create_endpoint_config(EndpointConfigName="c1", ProductionVariants=[variant])
    sm.create_endpoint_config(
        EndpointConfigName="c2", ProductionVariants=[{**variant, "InstanceType": "ml.c6i.xlarge"}]
    )
    sm.describe_endpoint_config(EndpointConfigName="c1")
    sm.list_endpoint_configs()
    arn = sm.create_endpoint(EndpointName="e1", EndpointConfigName="c1")["EndpointArn"]
    sm.describe_endpoint(EndpointName="e1")
    sm.list_endpoints()
    sm.add_tags(ResourceArn=arn, Tags=[{"Key": "smneuron:endpoint", "Value": "e1"}])
    sm.list_tags(ResourceArn=arn)
    sm.update_endpoint(EndpointName="e1", EndpointConfigName="c2")
    sm.describe_endpoint(EndpointName="e1")
    sm.update_endpoint_weights_and_capacities(
        EndpointName="e1",
        DesiredWeightsAndCapacities=[{"VariantName": "AllTraffic", "DesiredInstanceCount": 2}],
    )
    # data capture: DescribeEndpoint answers botocore's DataCaptureConfigSummary (CaptureStatus and
    # CurrentSamplingPercentage were missing: issue 64 #6)
    capture = {"EnableCapture": True, "InitialSamplingPercentage": 20, "DestinationS3Uri": "s3://b/capture",
               "CaptureOptions": [{"CaptureMode": "Input"}, {"CaptureMode": "Output"}]}  # fmt: skip
    sm.create_endpoint_config(
        EndpointConfigName="c-capture", ProductionVariants=[variant], DataCaptureConfig=capture
    )
    sm.create_endpoint(EndpointName="e-capture", EndpointConfigName="c-capture")
    summary = sm.describe_endpoint(EndpointName="e-capture")["DataCaptureConfig"]
    assert (summary["CaptureStatus"], summary["CurrentSamplingPercentage"]) == ("Started", 20)
    # inference components on an endpoint without a Model in its variant
    bare = {"VariantName": "AllTraffic", "InstanceType": "ml.inf2.xlarge", "InitialInstanceCount": 1}
    sm.create_endpoint_config(EndpointConfigName="c3", ExecutionRoleArn=ROLE, ProductionVariants=[bare])
    sm.create_endpoint(EndpointName="e2", EndpointConfigName="c3")
    spec = {
        "ModelName": "m1",
        "ComputeResourceRequirements": {
            "NumberOfAcceleratorDevicesRequired": 1.0,
            "MinMemoryRequiredInMb": 1024,
        },
    }
    sm.create_inference_component(
        InferenceComponentName="ic1", EndpointName="e2", VariantName="AllTraffic", Specification=spec,
        RuntimeConfig={"CopyCount": 1},
    )  # fmt: skip
    sm.describe_inference_component(InferenceComponentName="ic1")
    sm.list_inference_components(EndpointNameEquals="e2")
    sm.update_inference_component(
        InferenceComponentName="ic1", Specification=spec, RuntimeConfig={"CopyCount": 2}
    )
    sm.update_inference_component_runtime_config(
        InferenceComponentName="ic1", DesiredRuntimeConfig={"CopyCount": 1}
    )
    sm.delete_inference_component(InferenceComponentName="ic1")
    # SageMaker AI benchmark jobs (plain moto runs no endpoint server: the job ends Failed, saying so)
    spec = '{"benchmark": {"type": "aiperf"}, "parameters": {"concurrency": 2, "request_count": 4}}'
    sm.create_ai_workload_config(
        AIWorkloadConfigName="w1", AIWorkloadConfigs={"WorkloadSpec": {"Inline": spec}}
    )
    sm.describe_ai_workload_config(AIWorkloadConfigName="w1")
    sm.list_ai_workload_configs()
    sm.create_ai_benchmark_job(
        AIBenchmarkJobName="j1", BenchmarkTarget={"Endpoint": {"Identifier": "e1"}}, AIWorkloadConfigIdentifier="w1",
        OutputConfig={"S3OutputLocation": "s3://b/bench/"}, RoleArn=ROLE,
    )  # fmt: skip
    sm.describe_ai_benchmark_job(AIBenchmarkJobName="j1")
    sm.list_ai_benchmark_jobs()
    sm.stop_ai_benchmark_job(AIBenchmarkJobName="j1")
    for _ in range(100):
        if sm.describe_ai_benchmark_job(AIBenchmarkJobName="j1")["AIBenchmarkJobStatus"] not in (
            "InProgress",
            "Stopping",
        ):
            break
        __import__("time").sleep(0.05)
    sm.delete_ai_benchmark_job(AIBenchmarkJobName="j1")
    sm.delete_ai_workload_config(AIWorkloadConfigName="w1")
    # error paths: what a waiter, a retry or a user's typo meets
    for call, kwargs in [
        (sm.describe_endpoint, {"EndpointName": "missing"}),
        (sm.describe_model, {"ModelName": "missing"}),
        (sm.describe_endpoint_config, {"EndpointConfigName": "missing"}),
        (sm.describe_inference_component, {"InferenceComponentName": "missing"}),
        (sm.create_endpoint, {"EndpointName": "e1", "EndpointConfigName": "c1"}),  # a second of one name
        (sm.update_endpoint, {"EndpointName": "missing", "EndpointConfigName": "c1"}),
        (sm.create_endpoint_config, {"EndpointConfigName": "c9", "ProductionVariants": [{**variant, "InstanceType": "ml.x9.huge"}]}),
        (sm.list_pipeline_execution_steps, {"PipelineExecutionArn": "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/x"}),
        (sm.describe_ai_benchmark_job, {"AIBenchmarkJobName": "missing"}),
        (sm.describe_ai_workload_config, {"AIWorkloadConfigName": "missing"}),
        (sm.create_ai_workload_config, {"AIWorkloadConfigName": "bad", "AIWorkloadConfigs": {"WorkloadSpec": {"Inline": "[1, 2"}}}),
    ]:  # fmt: skip
        with pytest.raises(sm.exceptions.ClientError):
            call(**kwargs)
    sm.delete_endpoint(EndpointName="e1")
    sm.delete_endpoint(EndpointName="e2")
    for name in ("c1", "c2", "c3"):
        sm.delete_endpoint_config(EndpointConfigName=name)
    sm.delete_model(ModelName="m1")


def test_every_answer_of_the_embedded_sagemaker_fits_botocores_model(aws, role):
    recorder = Recorder()
    sm = recorder.attach(boto3.client("sagemaker", region_name="us-east-1"))
    _exercise(sm)
    found = recorder.problems("sagemaker")
    assert sorted(set(ANSWERED) - set(found)) == [], "operations listed but not exercised"
    assert {op: p for op, p in found.items() if p} == {}
    statuses = {(op, status) for op, status, _ in recorder.answers if status >= 300}
    assert ("DescribeEndpoint", 400) in statuses and ("CreateEndpoint", 400) in statuses


def test_smneuron_adds_only_operations_botocore_knows():
    """An operation botocore does not know is one no client can call: each added answer has a botocore name."""
    from smneuron.local.aws.engine.embedded import patch_moto

    patch_moto()
    known = {
        op
        for service in ("sagemaker", "iam", "application-autoscaling", "service-quotas")
        for op in service_model(service).operation_names
    }
    added = {p.name for p in patching.APPLIED if p.kind == "adds" and p.owner.endswith("Response")}
    # moto's dispatch lower-cases acronyms (create_ai_benchmark_job): botocore's names, compared without case
    camel = {"".join(w.capitalize() for w in name.split("_")).lower() for name in added}
    lowered = {k.lower() for k in known}
    assert camel and camel <= lowered, camel - lowered
    assert {op.lower() for op in ANSWERED if "added" in ANSWERED[op]} <= camel | {"updateendpoint"}


def test_a_broken_answer_is_caught():
    """The checker itself: the answers a drifting fake would give are each reported."""
    model = service_model("sagemaker")
    shape = model.operation_model("DescribeEndpoint").output_shape
    good = {
        "EndpointName": "e",
        "EndpointArn": "arn:aws:sagemaker:us-east-1:123456789012:endpoint/e",
        "EndpointConfigName": "c",
        "EndpointStatus": "InService",
        "CreationTime": 1.7e9,
        "LastModifiedTime": 1.7e9,
    }
    assert response_problems(good, shape) == []
    broken = {k: v for k, v in good.items() if k != "EndpointArn"}
    broken.update(EndpointStatus="Running", CreationTime="2026-11-25T08:00:00Z", Workers=2)
    said = " ".join(response_problems(broken, shape))
    assert "EndpointArn is missing" in said and "'Running' is not one of" in said
    assert "not an epoch timestamp" in said and "Workers is not a member" in said
    operation = model.operation_model("DescribeEndpoint")
    assert error_problems(operation, 404, {"__type": "ValidationException", "message": "x"})
    assert error_problems(operation, 400, {"__type": "NoSuchThing", "message": "x"})
    assert error_problems(operation, 400, {"__type": "ValidationException", "message": "x"}) == []
    assert json.dumps(
        error_problems(operation, 400, {"__type": "ValidationException"})
    )  # no message: reported
