"""The embedded SageMaker tells an asynchronous endpoint by its endpoint config, as SageMaker holds it: while the
endpoint's instances were not up yet (Creating, or restored by `local up`), InvokeEndpointAsync was refused as "not an
asynchronous endpoint" and InvokeEndpoint was taken."""

from __future__ import annotations

from types import SimpleNamespace

from smneuron.local.aws.data_plane.routing import async_config


def test_an_endpoint_whose_instances_are_not_up_is_told_by_its_config(session, role):
    sm = session.client("sagemaker")
    sm.create_model(ModelName="m", ExecutionRoleArn=role,
                    PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/pytorch:2",
                                      "ModelDataUrl": "s3://b/model.tar.gz"})  # fmt: skip
    variant = {
        "VariantName": "AllTraffic",
        "ModelName": "m",
        "InstanceType": "ml.c6i.xlarge",
        "InitialInstanceCount": 1,
    }
    queued = {"OutputConfig": {"S3OutputPath": "s3://b/out"}}
    sm.create_endpoint_config(
        EndpointConfigName="q", ProductionVariants=[variant], AsyncInferenceConfig=queued
    )
    sm.create_endpoint_config(EndpointConfigName="r", ProductionVariants=[variant])
    sm.create_endpoint(EndpointName="queue", EndpointConfigName="q")
    sm.create_endpoint(EndpointName="now", EndpointConfigName="r")
    starting = SimpleNamespace(endpoints={}, session=lambda: session)  # a backer with no instance up yet
    assert async_config(starting, "queue")["OutputConfig"] == queued["OutputConfig"]
    assert async_config(starting, "now") is None and async_config(starting, "nope") is None
