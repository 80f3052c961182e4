"""The embedded AWS for `smneuron demo` and the tests: moto, extended where it lags the real API.

moto (5.2) is behind SageMaker in two ways that matter to smneuron, and they are fixed here, in one
place, by teaching moto what the real service does (checked against botocore's service model):

- its endpoint-config validation has a hard-coded instance list without ml.inf2.*: we validate
  against botocore's ``ProductionVariantInstanceType`` enum instead, exactly as the real API does;
- it does not implement ``UpdateEndpoint``: we add it (switch the endpoint to the new config,
  keep the deployment config it was given so tests can read it back; an endpoint that is Creating or
  Updating is refused, as SageMaker refuses it);
- its CreateEndpoint replaces an endpoint of the same name: SageMaker refuses with ValidationException;
- its endpoints are InService the instant they are created; ``set_endpoint_delay`` makes them
  stay Creating / Updating for a while, as real ones do for minutes (benchmarks of waiting);
- its S3 bucket-policy enforcement ignores Conditions, so a conditional Deny (smneuron's "deny
  unless aws:SecureTransport", infra/'s "deny puts that name an encryption other than SSE-KMS")
  denies every request: the fake cannot see the request context those conditions test, so it
  leaves conditional Denies unenforced (real S3 enforces them; tests check the policies' text)
  and keeps enforcing every unconditional statement;
- it does not implement ``ListPipelineExecutionSteps``: we add it, reporting the execution's
  top-level steps with the status moto gives the execution (moto runs no step);
- its CreateBucket checks a name's length only: S3's naming rules refuse the rest (uppercase, ``..``, an IP address);
- its CreateModel takes any execution role ARN and image: SageMaker refuses those outside botocore's shapes, and a
  role that does not exist or does not let SageMaker assume it;
- its CloudFormation lacks ``AWS::S3::BucketPolicy``, keeps ``AWS::NoValue`` as a null inside lists
  (real CloudFormation drops the element) and does not recompute a stack's outputs when a change
  set is executed: we add the resource type, drop the nulls and refresh the outputs.

The product never works around moto; only this module changes moto. One module because that is the rule it
keeps: every change to moto is found here, started here (``embedded_aws``, behind the ``gate``), checked here.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from smneuron.container.rules import environment_problems
from smneuron.deployment.controls import VPC_ACTIONS
from smneuron.errors import MissingDependencyError
from smneuron.files.aws_config import check_aws_profile
from smneuron.files.local_record import LocalKeys, embedded_keys, register_embedded, signed_call
from smneuron.local.aws.auth.gate import Gate
from smneuron.local.aws.data_plane.stream_route import StreamRouter
from smneuron.local.aws.embedded_service import EmbeddedService
from smneuron.local.aws.engine import patching, pools
from smneuron.local.aws.engine.autoscaler import patch_scaling_activities
from smneuron.local.aws.engine.benchmark_jobs import patch_benchmark_jobs
from smneuron.local.aws.engine.components import patch_components
from smneuron.local.aws.engine.describe_shapes import patch_describe_shapes
from smneuron.local.aws.engine.hooks import install as install_hooks
from smneuron.local.aws.engine.iam_simulation import patch_policy_simulation, service_may_assume
from smneuron.local.aws.engine.quotas import patch_service_quotas
from smneuron.local.aws.engine.speed import patch_speed
from smneuron.local.aws.engine.transform_jobs import patch_transform_jobs
from smneuron.local.aws.http.connections import close_all, kept_alive
from smneuron.serving.ports import PortTaken, free_port
from smneuron.session import service_model

_PATCHED = False
_ENDPOINT_DELAY_S = 0.0


def clock() -> float:
    """The clock of the endpoints' simulated transitions (a test replaces it to control time)."""
    return time.monotonic()


def set_endpoint_delay(seconds: float) -> None:
    """Endpoints created or updated from now on report Creating/Updating for ``seconds``."""
    global _ENDPOINT_DELAY_S
    _ENDPOINT_DELAY_S = seconds


def _variant_instance_types() -> list[str]:

    return list(service_model("sagemaker").shape_for("ProductionVariantInstanceType").enum)


def patch_moto() -> None:
    """Apply the extensions (idempotent)."""
    global _PATCHED
    if _PATCHED:
        return
    patch_speed()  # first: EC2's import (below, through the autoscaling patches) makes botocore sessions
    from moto.core.responses import ActionResult
    from moto.sagemaker import models, responses
    from moto.sagemaker.exceptions import ValidationError

    _patch_instance_types(models, ValidationError)
    pools.patch(models, ValidationError)
    _patch_create_model(models, ValidationError)
    _patch_endpoint_updates(models, responses, ActionResult, ValidationError)
    _patch_pipeline_steps(models, responses, ActionResult)
    patch_components()
    patch_benchmark_jobs()
    patch_transform_jobs()
    patch_scaling_activities()
    patch_policy_simulation()
    patch_service_quotas()
    patch_describe_shapes()
    _patch_s3_conditional_denies()
    _patch_bucket_names()
    _patch_cloudformation()
    _require_private_members(models)
    _PATCHED = True
    patching.check()  # refuse a moto whose members moved: the patches would answer wrongly


def _patch_instance_types(models: Any, error: type) -> None:
    """An endpoint config takes the hosting instance types botocore's model lists (moto's list lacks ml.inf2)."""
    valid = _variant_instance_types()

    def validate_instance_type(self: Any, instance_type: str) -> None:
        if instance_type not in valid:
            raise error(
                message=f"Value '{instance_type}' at 'instanceType' failed to satisfy constraint: "
                f"Member must satisfy enum value set: {valid}"
            )

    patching.replace(models.FakeEndpointConfig, "validate_instance_type", validate_instance_type)


def _patch_endpoint_updates(models: Any, responses: Any, result: type, error: type) -> None:
    """UpdateEndpoint (moto has none); a second CreateEndpoint of a name refused; Creating and Updating last a moment,
    as SageMaker's do, so that a waiter sees them."""

    def backend_update_endpoint(
        self: Any, endpoint_name: str, endpoint_config_name: str, deployment_config: dict | None
    ) -> Any:
        endpoint = self.endpoints.get(endpoint_name)
        if endpoint is None:
            arn = models.FakeEndpoint.arn_formatter(endpoint_name, self.account_id, self.region_name)
            raise error(message=f"Could not find endpoint '{arn}'.")
        if self.describe_endpoint(endpoint_name)["EndpointStatus"] in ("Creating", "Updating", "Deleting"):
            raise error(message=f'Cannot update in-progress endpoint "{endpoint.arn}".')
        config = self.describe_endpoint_config(endpoint_config_name)  # raises moto's ValidationException
        was = self.endpoint_configs.get(endpoint.endpoint_config_name)
        if was is not None and was.async_inference_config and not config.get("AsyncInferenceConfig"):
            # AWS's ValidationException begins so (quoted in github.com/aws/sagemaker-python-sdk/pull/3124; the rest
            # of its sentence is not published there); real-time to asynchronous is not documented, and is taken
            raise error(
                message=f"The AsyncInferenceConfig parameter cannot be removed from this endpoint {endpoint_name}."
            )
        endpoint.endpoint_config_name = endpoint_config_name
        endpoint.production_variants = endpoint._process_production_variants(config["ProductionVariants"])
        endpoint.last_deployment_config = deployment_config
        endpoint.last_modified_time = models.utcnow()
        endpoint._smneuron_busy = ("Updating", clock() + _ENDPOINT_DELAY_S)
        return endpoint

    def response_update_endpoint(self: Any) -> Any:
        endpoint = self.sagemaker_backend.update_endpoint(
            endpoint_name=self._get_param("EndpointName"),
            endpoint_config_name=self._get_param("EndpointConfigName"),
            deployment_config=self._get_param("DeploymentConfig"),
        )
        return result({"EndpointArn": endpoint.arn})

    original_create = patching.original(models.SageMakerModelBackend, "create_endpoint")
    original_describe = patching.original(models.SageMakerModelBackend, "describe_endpoint")

    def create_endpoint(self: Any, endpoint_name: str, *args: Any, **kwargs: Any) -> Any:
        if endpoint_name in self.endpoints:  # moto replaced it silently; SageMaker refuses
            arn = models.FakeEndpoint.arn_formatter(endpoint_name, self.account_id, self.region_name)
            raise error(message=f'Cannot create already existing endpoint "{arn}".')
        endpoint = original_create(self, endpoint_name, *args, **kwargs)
        endpoint._smneuron_busy = ("Creating", clock() + _ENDPOINT_DELAY_S)
        return endpoint

    def describe_endpoint(self: Any, endpoint_name: str) -> dict:
        response = original_describe(self, endpoint_name)
        busy = getattr(self.endpoints.get(endpoint_name), "_smneuron_busy", None)
        if busy and clock() < busy[1] and response.get("EndpointStatus") == "InService":
            response = dict(response, EndpointStatus=busy[0])
        return response

    patching.replace(models.SageMakerModelBackend, "create_endpoint", create_endpoint)
    patching.replace(models.SageMakerModelBackend, "describe_endpoint", describe_endpoint)
    patching.add(models.SageMakerModelBackend, "update_endpoint", backend_update_endpoint)
    patching.add(responses.SageMakerResponse, "update_endpoint", response_update_endpoint)


def _require_private_members(models: Any) -> None:
    """The private moto members smneuron calls without replacing them."""
    from moto.cloudformation.models import Stack
    from moto.iam.models import IAMBackend

    patching.requires(Stack, "_parse_template")
    patching.requires(Stack, "_create_output_map")
    patching.requires(models.FakeEndpoint, "_process_production_variants")
    patching.requires(IAMBackend, "get_role_by_arn")  # CreateModel's check that SageMaker may assume the role


def _patch_pipeline_steps(models: Any, responses: Any, ActionResult: Any) -> None:
    """ListPipelineExecutionSteps. moto marks every execution Succeeded the moment it starts
    without running anything; the steps it reports are the execution's top-level definition steps,
    each with the execution's status (the same fiction, stated step by step)."""

    def response_list_pipeline_execution_steps(self: Any) -> Any:
        backend = self.sagemaker_backend
        arn = self._get_param("PipelineExecutionArn")
        execution = models.get_pipeline_execution_from_arn(backend.pipelines, arn)  # raises for unknown ARNs
        steps = json.loads(execution.pipeline_definition_for_execution).get("Steps", [])
        if self._get_param("SortOrder", "Descending") == "Descending":
            steps = steps[::-1]
        return ActionResult(
            {
                "PipelineExecutionSteps": [
                    {
                        "StepName": st["Name"],
                        "StepStatus": execution.pipeline_execution_status,
                        "StartTime": execution.start_time,
                        "EndTime": execution.last_modified_time,
                    }
                    for st in steps
                ]
            }
        )

    patching.add(
        responses.SageMakerResponse, "list_pipeline_execution_steps", response_list_pipeline_execution_steps
    )


def _patch_cloudformation() -> None:

    from moto.cloudformation import parsing
    from moto.core.common_models import CloudFormationModel
    from moto.s3.models import s3_backends

    original_clean = patching.original(parsing, "clean_json")

    def clean_json(resource_json: Any, resources_map: Any) -> Any:
        if isinstance(resource_json, list):  # Fn::If ... AWS::NoValue removes the element
            cleaned = (clean_json(v, resources_map) for v in resource_json)
            return [v for v in cleaned if v is not None]
        return original_clean(resource_json, resources_map)

    patching.replace(parsing, "clean_json", clean_json)

    class BucketPolicy(CloudFormationModel):
        def __init__(self, bucket: str) -> None:
            self.bucket = bucket

        @staticmethod
        def cloudformation_type() -> str:
            return "AWS::S3::BucketPolicy"

        @staticmethod
        def cloudformation_name_type() -> str:
            return ""

        @property
        def physical_resource_id(self) -> str:
            return self.bucket

        @classmethod
        def create_from_cloudformation_json(
            cls,
            resource_name: str,
            cloudformation_json: Any,
            account_id: str,
            region_name: str,
            **kwargs: Any,
        ) -> BucketPolicy:
            props = cloudformation_json["Properties"]
            backend = s3_backends[account_id]["aws"]
            backend.put_bucket_policy(props["Bucket"], json.dumps(props["PolicyDocument"]).encode())
            return cls(props["Bucket"])

        @classmethod
        def update_from_cloudformation_json(
            cls,
            original_resource: Any,
            new_resource_name: str,
            cloudformation_json: Any,
            account_id: str,
            region_name: str,
        ) -> BucketPolicy:
            return cls.create_from_cloudformation_json(
                new_resource_name, cloudformation_json, account_id, region_name
            )

        @classmethod
        def delete_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
        ) -> None:
            s3_backends[account_id]["aws"].delete_bucket_policy(cloudformation_json["Properties"]["Bucket"])

    from moto.cloudformation import models as cfn_models

    original_apply = patching.original(cfn_models.ChangeSet, "apply")

    def apply(self: Any) -> None:
        original_apply(self)
        self.stack.template = self.template
        self.stack._parse_template()
        self.stack.output_map = self.stack._create_output_map()

    patching.replace(cfn_models.ChangeSet, "apply", apply)
    parsing.get_model_map.cache_clear()
    parsing.get_name_type_map.cache_clear()


def _conditional_deny(statement: dict) -> bool:
    return statement.get("Effect") == "Deny" and bool(statement.get("Condition"))


def _patch_s3_conditional_denies() -> None:

    from moto.iam.access_control import IAMPolicy, PermissionResult
    from moto.s3 import models as s3_models

    def get_permission(self: Any, action: str, resource: str) -> Any:
        if self.policy is None:
            return PermissionResult.NEUTRAL
        doc = json.loads(self.policy.decode() if isinstance(self.policy, bytes) else self.policy)
        statements = doc.get("Statement") or []
        statements = [statements] if isinstance(statements, dict) else statements
        doc["Statement"] = [st for st in statements if not _conditional_deny(st)]
        if not doc["Statement"]:
            return PermissionResult.NEUTRAL
        return IAMPolicy(json.dumps(doc)).is_action_permitted(action, resource)

    patching.replace(s3_models.FakeBucket, "get_permission", get_permission)


# S3's rules for a new general purpose bucket's name (https://docs.aws.amazon.com/AmazonS3/latest/userguide/
# bucketnamingrules.html): 3-63 lowercase letters, digits, dots and hyphens, a letter or digit at each end, no two dots
# together, not an IP address, none of S3's reserved prefixes and suffixes. moto checked only the length.
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_BUCKET_RESERVED = (
    ("xn--", "sthree-", "amzn-s3-demo-"),
    ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"),
)


def _bucket_name_refused(name: str) -> bool:
    prefixes, suffixes = _BUCKET_RESERVED
    return (
        not _BUCKET.fullmatch(name)
        or ".." in name
        or re.fullmatch(r"\d+\.\d+\.\d+\.\d+", name) is not None
        or name.startswith(prefixes)
        or name.endswith(suffixes)
    )


def _patch_bucket_names() -> None:
    """CreateBucket refuses a name S3 refuses (InvalidBucketName), as it refused only a length before: a bucket named
    UPPER was made here and refused by AWS."""
    from moto.s3 import models as s3_models
    from moto.s3.exceptions import InvalidBucketName

    create = patching.original(s3_models.S3Backend, "create_bucket")

    def create_bucket(self: Any, bucket_name: str, *args: Any, **kwargs: Any) -> Any:
        if _bucket_name_refused(bucket_name):
            raise InvalidBucketName()
        return create(self, bucket_name, *args, **kwargs)

    patching.replace(s3_models.S3Backend, "create_bucket", create_bucket)


def _sagemaker_may_assume(account_id: str, role_arn: str) -> bool:
    """Whether the account holds the role and its trust policy lets SageMaker assume it, as CreateModel checks
    (its refusal, AWS's words: "Could not assume role ARN. Please ensure that the role exists and allows principal
    'sagemaker.amazonaws.com' to assume the role.", seen from CreateTransformJob in
    github.com/awslabs/predictive-maintenance-using-machine-learning/issues/3)."""
    from moto.iam.exceptions import NotFoundException
    from moto.iam.models import iam_backends

    try:
        role = iam_backends[account_id]["global"].get_role_by_arn(role_arn)
    except NotFoundException:
        return False
    return service_may_assume(role, "sagemaker.amazonaws.com")


def _shape_problem(name: str, value: str, where: str) -> str | None:
    """``value`` against botocore's string shape ``name`` (its length and pattern), in SageMaker's words: moto checks
    neither, and SageMaker refuses a role ARN with a space or an image URI past 255 characters before it creates."""
    shape = service_model("sagemaker").shape_for(name).metadata
    failed = f"at '{where}' failed to satisfy constraint: Member must"
    if len(value) > shape.get("max", len(value)):
        return f"Value {failed} have length less than or equal to {shape['max']}"
    if len(value) < shape.get("min", 0):
        return f"Value {failed} have length greater than or equal to {shape['min']}"
    if "pattern" in shape and not re.fullmatch(shape["pattern"], value):
        return f"Value '{value}' {failed} satisfy regular expression pattern: {shape['pattern']}"
    return None


def _patch_create_model(models: Any, validation_error: type) -> None:
    """CreateModel refuses a container environment SageMaker refuses (``container.rules``), an execution role ARN or
    an image URI outside botocore's shapes, in SageMaker's words."""
    create = patching.original(models.SageMakerModelBackend, "create_model")

    def create_model(
        self: Any,
        model_name: str,
        execution_role_arn: str,
        primary_container: Any,
        vpc_config: Any,
        containers: Any,
        tags: Any,
    ) -> Any:
        problems = [_shape_problem("RoleArn", execution_role_arn, "executionRoleArn")]
        for i, container in enumerate([primary_container or {}, *(containers or [])]):
            where = "primaryContainer" if i == 0 else f"containers.{i}.member"
            problems.append(_shape_problem("ContainerImage", container.get("Image", "x"), f"{where}.image"))
        if any(problems):
            found = [p for p in problems if p]
            raise validation_error(
                message=f"{len(found)} validation error{'s'[: len(found) - 1]} detected: {'; '.join(found)}"
            )
        if not _sagemaker_may_assume(self.account_id, execution_role_arn):
            raise validation_error(
                message=f"Could not assume role {execution_role_arn}. Please ensure that the role exists and allows "
                "principal 'sagemaker.amazonaws.com' to assume the role."
            )
        for i, container in enumerate([primary_container or {}, *(containers or [])]):
            problems = environment_problems(dict(container.get("Environment") or {}))
            if problems:
                where = "primaryContainer.environment" if i == 0 else f"containers.{i}.member.environment"
                raise validation_error(
                    message=f"1 validation error detected: Value at '{where}' failed to satisfy constraint: "
                    f"{'; '.join(problems)}"
                )
        return create(self, model_name, execution_role_arn, primary_container, vpc_config, containers, tags)

    patching.replace(models.SageMakerModelBackend, "create_model", create_model)


def _prompt(server_class: type) -> type:
    """moto's threaded server (moto.moto_server.threaded_moto_server), stopping within 50 ms: its loop looked for the
    stop every 0.5 s (socketserver's default), which every `local down`, demo and in-process run waited out."""
    patching.requires(server_class, "_server_entry")

    class Prompt(server_class):  # type: ignore[misc, valid-type]
        def _server_entry(self) -> None:  # moto's, with the shorter poll
            from moto.moto_server.werkzeug_app import (
                DomainDispatcherApplication,
                MotoRequestHandler,
                create_backend_app,
            )
            from werkzeug.serving import make_server

            app = DomainDispatcherApplication(create_backend_app)
            try:
                self._server = make_server(
                    self._ip_address, self._port, app, True, request_handler=MotoRequestHandler
                )
            except BaseException as e:  # werkzeug exits its thread on a taken port: start() waited forever
                self.failed = e
                self._server_ready_event.set()
                return
            self._server_ready_event.set()
            self._server.serve_forever(poll_interval=0.05)

        def start(self) -> None:
            self.failed: BaseException | None = None
            super().start()
            if self.failed is not None:  # taken between its choice and the bind (or given taken)
                raise PortTaken.of(self._ip_address, self._port)

    return Prompt


@contextmanager
def embedded_aws(
    port: int | None = None,
    *,
    keys: LocalKeys | None = None,
    allowed_origins: Iterable[str] = (),
    service: EmbeddedService | None = None,
) -> Iterator[str]:
    """Run moto's server (with the extensions) on loopback behind the ``gate`` (Host, Origin, SigV4); yields its
    endpoint URL. It accepts requests signed with ``keys`` (fresh random ones unless given: `local up` gives its
    state directory's), which ``Session.embedded(url)`` and ``local_credentials(url)`` find for this process.
    ``service``: what stands behind it (its endpoints' backer, its state's keeper), set by the caller once the URL is
    known; none given, it is plain moto behind the gate. Leaving, it stops the service's model servers."""

    check_aws_profile()
    try:
        from moto.moto_server.werkzeug_app import MotoRequestHandler
        from moto.server import ThreadedMotoServer
    except ImportError as e:
        raise MissingDependencyError(
            "moto",
            "The embedded AWS (smneuron demo, pipeline run)",
            "Install it with `pip install 'smneuron[local]'` (moto's server runs on 127.0.0.1 only).",
        ) from e
    patch_moto()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log on the user's terminal

    port = port or free_port()
    server = _prompt(ThreadedMotoServer)(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    patching.requires(server, "_server")
    patching.requires(server._server, "RequestHandlerClass")
    patching.check()
    server._server.RequestHandlerClass = kept_alive(MotoRequestHandler)  # HTTP/1.1 connections kept alive
    keys = keys or LocalKeys.new()
    # InvokeEndpointWithResponseStream (moto has none), all of it behind the gate
    service = service if service is not None else EmbeddedService()
    install_hooks()  # moto reports endpoint lifecycle and invocations to the service a request is for
    routes = StreamRouter(server._server.app, service)
    server._server.app = Gate(routes, port, {keys.access_key: keys.secret_key}, allowed_origins)
    url = f"http://127.0.0.1:{port}"
    register_embedded(url, keys)
    # moto keeps its state per process: each embedded AWS starts empty and leaves nothing behind
    _reset(url)
    try:
        yield url
    finally:
        service.stop()  # its model servers and copies, before the engine resets under them
        _reset(url)
        server.stop()
        close_all(server._server)
        register_embedded(url, None)


@contextmanager
def local_credentials(url: str) -> Iterator[None]:
    """The credentials of the embedded AWS at ``url`` in ``os.environ`` (for the processes this one starts, which
    find them there); the caller's come back after."""

    names = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
    saved = {k: os.environ.get(k) for k in names}
    os.environ.update(embedded_keys(url).environment())
    os.environ.pop("AWS_SESSION_TOKEN", None)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


LOCAL_ROLE_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Action": [
                "sagemaker:*",
                "s3:*",
                "ecr:*",
                "logs:*",
                "cloudwatch:*",
                "application-autoscaling:*",
                "scheduler:*",
                "events:*",
                "iam:PassRole",
                "iam:GetRole",
                "kms:*",
                "sns:Publish",  # an asynchronous endpoint's notifications (async-inference-check-predictions)
                *VPC_ACTIONS,  # a Model in a VPC: SageMaker makes its network interfaces with the role
            ],
            "Resource": "*",
        }
    ],
}


def create_sagemaker_role(session: Any, name: str = "smneuron-execution-role") -> str:
    """A role SageMaker may assume, in the embedded AWS (the demo's and local runs' execution role); one that exists
    (a local run against `local up`'s service, which made it) is kept and its policy put again."""

    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": "sts:AssumeRole",
                "Principal": {"Service": "sagemaker.amazonaws.com"},
            }
        ],
    }
    iam = session.client("iam")
    try:
        arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    except iam.exceptions.EntityAlreadyExistsException:
        arn = iam.get_role(RoleName=name)["Role"]["Arn"]
    # what an execution role needs in the embedded account (one account, nothing else in it); the
    # SageMaker SDK v3 simulates the role's policies before it creates anything (iam_simulation)
    iam.put_role_policy(
        RoleName=name, PolicyName="smneuron-local-execution", PolicyDocument=json.dumps(LOCAL_ROLE_POLICY)
    )
    return arn


def _reset(url: str) -> None:
    signed_call(url, embedded_keys(url), "POST", "/moto-api/reset")
