"""The SageMaker Pipeline definition, built with the SageMaker Python SDK v3 (``sagemaker.mlops.workflow``).

This is the only module of smneuron that imports ``sagemaker`` (the optional ``pipeline`` extra:
``sagemaker>=3,<4``). It turns a ``smneuron.pipeline.plan.PipelinePlan`` into steps; every job runs
``entry.py``, which installs the smneuron wheel that travels with the job and runs ``steps/<step>.py``:
the steps call smneuron's own compile, package, upload, evaluation and deploy functions.

Encoders (inf1, inf2)::

    Compile (Processing, CPU, target DLC) --> CreateModel (ModelStep: ModelBuilder, no repack)
      inf2: --> EvaluateTransform (Batch Transform on ml.inf2) --> Score (Processing, CPU)
      inf1: --> StagingEvaluate (Processing: short-lived ml.inf1 endpoint, scored, deleted)
                 RemoveStaging (Processing, runs only if StagingEvaluate failed: deletes what it left)
    --> CheckAccuracy (Condition on evaluation.json)
          pass: [Register (ModelStep: ModelBuilder.register)] --> Deploy (Processing: smneuron serves the
                Model that CreateModel made, by name: blue/green with alarm rollback, autoscaling)
          fail: AccuracyGateFailed (Fail, quoting the metrics)

Text generation (inf2)::

    Compile (Processing, CPU, vLLM Neuron DLC: optimum-neuron export, or a precompiled artifact; CPU
             reference continuations and log-probabilities from transformers)
    --> CreateModel (ModelStep) --> StagingEvaluate (Processing: short-lived staging component, greedy
        prompts, scored, deleted) [+ RemoveStaging on failure]
    --> CheckAgreement (Condition)
          pass: Deploy (Processing: smneuron's apply serves the evaluated Model, by name, as the endpoint's
                component: the endpoint if missing, a rolling copy update rolled back by the 5XX alarm,
                copy autoscaling reconciled)
          fail: AgreementGateFailed (Fail, quoting the agreement numbers)
"""

from __future__ import annotations

import json
import logging
import warnings
from typing import Any

from sagemaker.core.modules.configs import Networking
from sagemaker.core.processing import ScriptProcessor
from sagemaker.core.shapes import ProcessingInput, ProcessingOutput, ProcessingS3Input, ProcessingS3Output
from sagemaker.core.transformer import Transformer
from sagemaker.core.workflow.conditions import ConditionEquals, ConditionGreaterThanOrEqualTo
from sagemaker.core.workflow.execution_variables import ExecutionVariables
from sagemaker.core.workflow.functions import Join, JsonGet
from sagemaker.core.workflow.parameters import ParameterFloat, ParameterInteger, ParameterString
from sagemaker.core.workflow.pipeline_context import PipelineSession
from sagemaker.core.workflow.pipeline_definition_config import PipelineDefinitionConfig
from sagemaker.core.workflow.properties import PropertyFile
from sagemaker.mlops.workflow.condition_step import ConditionStep
from sagemaker.mlops.workflow.fail_step import FailStep
from sagemaker.mlops.workflow.model_step import ModelStep
from sagemaker.mlops.workflow.pipeline import Pipeline
from sagemaker.mlops.workflow.retry import (
    SageMakerJobExceptionTypeEnum,
    SageMakerJobStepRetryPolicy,
    StepExceptionTypeEnum,
    StepRetryPolicy,
)
from sagemaker.mlops.workflow.step_dependency import StepDependency, TriggerCondition
from sagemaker.mlops.workflow.steps import CacheConfig, ProcessingStep, TransformStep
from sagemaker.mlops.workflow.triggers import PipelineSchedule
from sagemaker.serve.model_builder import ModelBuilder

from smneuron.artifact.kind import ENCODER, GENERATION, kind_of

IN, OUT = "/opt/ml/processing/input", "/opt/ml/processing/output"
QUIET_LOGGERS = {
    "sagemaker.config": logging.WARNING,  # "Applied value from config key ..." on every lookup
    "sagemaker.core.workflow.utilities": logging.ERROR,  # "Popping out 'ModelName' ..." notes
    "sagemaker.core.helper.iam_role_resolver": logging.WARNING,
    "sagemaker.core.utils.utils": logging.WARNING,  # "Model has been created" (nothing is, in a pipeline)
    "sagemaker.serve": logging.WARNING,
    "sagemaker.mlops": logging.WARNING,
    "sagemaker.core.telemetry": logging.WARNING,
}


def sdk_session(session: Any) -> PipelineSession:
    """A SageMaker SDK v3 PipelineSession on smneuron's boto3 clients and bucket.

    The user's SDK config still applies; the SDK's usage telemetry (an HTTPS call to an AWS-owned
    bucket on every create) does not: smneuron makes no network call its user did not ask for."""
    for name, level in QUIET_LOGGERS.items():
        logging.getLogger(name).setLevel(level)
    warnings.filterwarnings("ignore", message="Running within a PipelineSession")
    _validate_sdk_config_once()
    _local_client_names_only()
    config = _sdk_config()
    return PipelineSession(
        boto_session=session.bound_boto_session(),  # the SDK's own clients keep to the session's endpoint
        sagemaker_client=session.client("sagemaker"),
        default_bucket=session.bucket_name,
        sagemaker_config=config,
    )


def _validate_sdk_config_once() -> None:
    """The SDK re-validates its whole config against its JSON schema on every config lookup (~0.2 s, 85 per
    encoder definition: 18 s of a 20 s build) once the config is non-empty: validate each distinct config once."""
    from sagemaker.core.config.config_manager import SageMakerConfig

    original = SageMakerConfig.validate_sagemaker_config
    if getattr(original, "smneuron_memoized", False):
        return
    seen: set[str] = set()

    def validate_once(sagemaker_config: dict | None = None) -> None:
        key = json.dumps(sagemaker_config, sort_keys=True, default=str)
        if key not in seen:
            original(sagemaker_config)
            seen.add(key)

    validate_once.smneuron_memoized = True  # type: ignore[attr-defined]
    SageMakerConfig.validate_sagemaker_config = staticmethod(validate_once)  # type: ignore[method-assign]


def _local_client_names_only() -> None:
    """ProcessingStep and TransformStep make a ``LocalSagemakerClient`` only to read the names of its
    ``create_processing_job`` / ``create_transform_job`` methods (sagemaker/mlops/workflow/steps.py), and each one
    is a LocalSession: a new boto3 Session and its clients, about 0.25 s of CPU, 1 s of a 1.3 s encoder definition.
    The class answers the same names without a session."""
    from sagemaker.mlops.workflow import steps

    real = getattr(steps, "LocalSagemakerClient", None)  # a later SDK without it: nothing to spare
    if real is None or getattr(real, "smneuron_names_only", False):
        return

    class NamesOnly:
        smneuron_names_only = True

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

    steps.LocalSagemakerClient = NamesOnly  # type: ignore[misc,assignment]


def _sdk_config() -> dict:
    from sagemaker.core.config.config import load_sagemaker_config

    config = load_sagemaker_config()
    config.setdefault("SchemaVersion", "1.0")
    config.setdefault("SageMaker", {}).setdefault("PythonSDK", {}).setdefault("Modules", {})[
        "TelemetryOptOut"
    ] = True
    return config


def put_schedule(
    name: str, schedule: dict[str, Any], *, role_arn: str, session: Any, enabled: bool = True
) -> str:
    """Create or update the EventBridge Scheduler schedule that starts pipeline ``name``; its ARN."""
    pipeline = Pipeline(name=name, sagemaker_session=sdk_session(session))
    return pipeline.put_triggers(
        [PipelineSchedule(name=name, enabled=enabled, **schedule)], role_arn=role_arn
    )[0]


def upsert(pipeline: Pipeline, *, role_arn: str, tags: list[dict[str, str]]) -> dict:
    """Create or update ``pipeline`` (the SDK resolves and checks the role first)."""
    return pipeline.upsert(role_arn=role_arn, tags=tags)


class _Builder:
    """What every step shares: the plan, the SDK session, parameters, tags, cache, retries."""

    def __init__(self, plan: Any, session: Any) -> None:
        self.p = plan
        self.sm = sdk_session(session)
        self.params = _parameters(plan)
        self.P = {x.name: x for x in self.params}
        self.tags = [{"Key": k, "Value": v} for k, v in plan.tags.items()]
        self.cache = CacheConfig(enable_caching=plan.cache, expire_after=plan.cache_expire_after)
        self.api_retry = StepRetryPolicy(
            exception_types=[StepExceptionTypeEnum.THROTTLING, StepExceptionTypeEnum.SERVICE_FAULT],
            backoff_rate=2.0,
            interval_seconds=30,
            max_attempts=5,
        )
        self.job_retries = [
            self.api_retry,
            SageMakerJobStepRetryPolicy(
                exception_types=[
                    SageMakerJobExceptionTypeEnum.CAPACITY_ERROR,
                    SageMakerJobExceptionTypeEnum.RESOURCE_LIMIT,
                    SageMakerJobExceptionTypeEnum.INTERNAL_ERROR,
                ],
                backoff_rate=2.0,
                interval_seconds=60,
                max_attempts=plan.capacity_retries,
            ),
        ]

    def s3_out(self, *parts: str) -> Join:
        return Join(on="/", values=[self.p.output_prefix, ExecutionVariables.PIPELINE_EXECUTION_ID, *parts])

    def job(
        self,
        name: str,
        script: str,
        *,
        instance_type: Any,
        role: str,
        volume: int,
        inputs: list[tuple[str, Any]] = (),  # type: ignore[assignment]
        outputs: list[str] = (),  # type: ignore[assignment]
        arguments: list[Any],
        property_files: list[PropertyFile] | None = None,
        cached: bool = False,
        depends_on: list[Any] | None = None,
        retries: list[Any] | None = None,
    ) -> ProcessingStep:
        """A Processing step that runs ``entry.py <script> --config ... <arguments>`` in the plan's image."""
        p = self.p
        processor = ScriptProcessor(
            role=role,
            image_uri=p.image_uri,
            command=["python3"],
            instance_type=instance_type,
            instance_count=1,
            volume_size_in_gb=volume,
            env=p.job_environment,
            base_job_name=f"smneuron-{script}",
            tags=self.tags,
            sagemaker_session=self.sm,
            max_runtime_in_seconds=p.max_runtime_in_seconds,
        )
        step_args = processor.run(
            code=p.entry_uri,
            inputs=[
                _input("smneuron", p.wheel_uri, f"{IN}/smneuron"),
                _input("config", p.config_uri, f"{IN}/config"),
                *(_input(n, uri, f"{IN}/{n}") for n, uri in inputs),
            ],
            outputs=[
                ProcessingOutput(
                    output_name=o,
                    s3_output=ProcessingS3Output(
                        s3_uri=self.s3_out(name.lower(), o),
                        local_path=f"{OUT}/{o}",
                        s3_upload_mode="EndOfJob",
                    ),
                )
                for o in outputs
            ],
            arguments=[script, "--config", f"{IN}/config/pipeline.json", *arguments],
        )
        return ProcessingStep(
            name=name,
            step_args=step_args,
            property_files=property_files,
            cache_config=self.cache if cached else None,
            retry_policies=self.job_retries if retries is None else retries,
            depends_on=depends_on,
        )

    def create_model(self, model_data: Any) -> tuple[ModelStep, ModelBuilder]:
        """The candidate's SageMaker Model: the same CreateModel request `smneuron deploy` makes (image,
        smneuron's environment, the artifact as is: no repack). Evaluation and deploy use THIS Model."""
        p = self.p
        c = p.controls  # the Model's VPC and isolation, as `smneuron deploy` sends them (CreateModel)
        network = (
            {"network": Networking(
                subnets=list(c.vpc.subnets) if c.vpc else None,
                security_group_ids=list(c.vpc.security_groups) if c.vpc else None,
                enable_network_isolation=c.network_isolation,
            )}
            if c.vpc or c.network_isolation
            else {}
        )  # fmt: skip
        builder = ModelBuilder(
            image_uri=p.image_uri,
            s3_model_data_url=model_data,
            env_vars=dict(p.model_environment),
            role_arn=p.execution_role,
            sagemaker_session=self.sm,
            instance_type=p.instance.name,
            dependencies={"auto": False},  # the default {"auto": True} warns that the field is deprecated
            **network,
        )
        return ModelStep(
            name="CreateModel", step_args=builder.build(), retry_policies=[self.api_retry]
        ), builder

    def output_uri(self, step: ProcessingStep, name: str) -> Any:
        return step.properties.ProcessingOutputConfig.Outputs[name].S3Output.S3Uri

    def pipeline(self, steps: list[Any]) -> Pipeline:
        return Pipeline(
            name=self.p.name,
            parameters=self.params,
            steps=steps,
            sagemaker_session=self.sm,
            pipeline_definition_config=PipelineDefinitionConfig(use_custom_job_prefix=False),
        )


def _input(name: str, source: Any, destination: str) -> ProcessingInput:
    return ProcessingInput(
        input_name=name,
        s3_input=ProcessingS3Input(
            s3_uri=source,
            local_path=destination,
            s3_data_type="S3Prefix",
            s3_input_mode="File",
            s3_data_distribution_type="FullyReplicated",
        ),
    )


def build(plan: Any, session: Any) -> Pipeline:
    """The ``Pipeline`` for a ``smneuron.pipeline.plan.PipelinePlan`` on smneuron ``session``."""
    b = _Builder(plan, session)
    return _GRAPHS[kind_of(plan)](b)  # each kind's graph: this stage's half of the kind strategy


def _compile_step(
    b: _Builder, script: str, outputs: list[str], arguments: list[Any]
) -> tuple[ProcessingStep, PropertyFile]:
    """Compile on CPU in the target's DLC, with the uncompiled model's reference outputs on CPU."""
    p, P = b.p, b.P
    result = PropertyFile(name="CompileResult", output_name="result", path="compile.json")
    step = b.job(
        "Compile",
        script,
        instance_type=p.compile_instance_type,
        role=p.execution_role,
        volume=p.compile_volume_gb,
        inputs=[("model", P["ModelSourceS3Uri"]), ("data", P["EvaluationDataS3Uri"])],
        outputs=outputs,
        arguments=[
            "--model-dir",
            f"{IN}/model",
            "--data-dir",
            f"{IN}/data",
            "--out-dir",
            OUT,
            *arguments,
        ],
        property_files=[result],
        cached=True,
    )
    return step, result


def _staging_evaluate(
    b: _Builder,
    script: str,
    reference: tuple[str, Any],
    model_name: Any,
    evaluation: PropertyFile,
    gates: list[Any],
) -> ProcessingStep:
    """The short-lived staging endpoint (or component) of this execution: the candidate Model served on the
    target instance, asked the evaluation records, scored against the reference, deleted."""
    return b.job(
        "StagingEvaluate",
        script,
        instance_type=b.p.cpu_instance_type,
        role=b.p.pipeline_role,
        volume=b.p.small_volume_gb,
        inputs=[reference],
        outputs=["evaluation"],
        arguments=[
            "--model-name",
            model_name,
            "--instance-type",
            b.P["InstanceType"],
            "--execution-id",
            ExecutionVariables.PIPELINE_EXECUTION_ID,
            "--reference-dir",
            f"{IN}/reference",
            "--out-dir",
            f"{OUT}/evaluation",
            *gates,
        ],
        property_files=[evaluation],
    )


def _staging_cleanup(b: _Builder, staging: ProcessingStep, kind: str) -> ProcessingStep:
    """Runs only when the staging evaluation failed (a killed job skips its own cleanup): deletes the
    staging endpoint or component of this execution, so a failed run leaves nothing that bills."""
    return b.job(
        "RemoveStaging",
        "cleanup",
        instance_type=b.p.cpu_instance_type,
        role=b.p.pipeline_role,
        volume=b.p.small_volume_gb,
        arguments=["--kind", kind, "--execution-id", ExecutionVariables.PIPELINE_EXECUTION_ID],
        depends_on=[StepDependency(staging, TriggerCondition.FAILED)],
    )


def _endpoint_job(
    b: _Builder, name: str, script: str, output: str, model_name: Any, **kw: Any
) -> ProcessingStep:
    """A job that serves the evaluated Model on the production endpoint (after the gate passed); API retries
    only: a capacity retry of a job that waits for its endpoint would start a second wait."""
    return b.job(
        name,
        script,
        instance_type=b.p.cpu_instance_type,
        role=b.p.pipeline_role,
        volume=b.p.small_volume_gb,
        outputs=[output],
        arguments=[
            "--model-name",
            model_name,
            "--endpoint-name",
            b.P["EndpointName"],
            "--instance-type",
            b.P["InstanceType"],
            "--out-dir",
            f"{OUT}/{output}",
        ],
        retries=[b.api_retry],
        **kw,
    )


def _gate(
    b: _Builder,
    name: str,
    score: ProcessingStep,
    evaluation: PropertyFile,
    headline: list[tuple[str, Any]],
    if_steps: list[Any],
    fail_name: str,
    what: str,
) -> ConditionStep:
    def metric(path: str) -> JsonGet:
        return JsonGet(step_name=score.name, property_file=evaluation, json_path=path)

    return ConditionStep(
        name=name,
        conditions=[
            *(ConditionGreaterThanOrEqualTo(left=metric(path), right=bound) for path, bound in headline),
            ConditionEquals(left=metric("passed"), right=True),
        ],
        if_steps=if_steps,
        else_steps=[
            FailStep(
                name=fail_name,
                error_message=Join(on=" ", values=[what, metric("summary")]),
            )
        ],
    )


def _encoder(b: _Builder) -> Pipeline:
    p, P = b.p, b.P
    compile_step, compile_result = _compile_step(
        b,
        "compile",
        ["result", "reference", "requests"],
        [
            "--buckets",
            P["Buckets"],
            "--batch-size",
            P["BatchSize"].to_string(),
            "--auto-cast",
            P["AutoCast"],
            "--auto-cast-type",
            P["AutoCastType"],
        ],
    )
    model_data = JsonGet(step_name=compile_step.name, property_file=compile_result, json_path="model_data")
    create_model, builder = b.create_model(model_data)
    model_name = create_model.properties.ModelName

    evaluation = PropertyFile(name="Evaluation", output_name="evaluation", path="evaluation.json")
    thresholds = [
        "--min-top1-agreement",
        P["MinTop1Agreement"].to_string(),
        "--min-cosine",
        P["MinCosine"].to_string(),
        "--min-accuracy",
        P["MinAccuracy"],
        "--max-abs-diff",
        P["MaxAbsDiff"],
    ]
    reference = ("reference", b.output_uri(compile_step, "reference"))
    evaluate_steps: list[Any]
    if p.evaluation == "transform":
        transformer = Transformer(
            model_name=model_name,
            instance_count=1,
            instance_type=P["InstanceType"],
            output_path=b.s3_out("evaluate", "transform"),
            **p.feeding.sdk_transformer(),  # the transform planner's: one way to build a transform job
            tags=b.tags,
            sagemaker_session=b.sm,
        )
        transform = TransformStep(
            name="EvaluateTransform",
            step_args=transformer.transform(
                data=b.output_uri(compile_step, "requests"), **p.feeding.sdk_transform()
            ),
            cache_config=b.cache,
            retry_policies=b.job_retries,
        )
        score = b.job(
            "Score",
            "score",
            instance_type=p.cpu_instance_type,
            role=p.execution_role,
            volume=p.small_volume_gb,
            inputs=[reference, ("candidate", transform.properties.TransformOutput.S3OutputPath)],
            outputs=["evaluation"],
            arguments=[
                "--reference-dir",
                f"{IN}/reference",
                "--candidate-dir",
                f"{IN}/candidate",
                "--out-dir",
                f"{OUT}/evaluation",
                *thresholds,
            ],
            property_files=[evaluation],
            cached=True,
        )
        evaluate_steps = [transform, score]
    else:  # Batch Transform takes no ml.inf1: a short-lived endpoint
        score = _staging_evaluate(b, "staging", reference, model_name, evaluation, thresholds)
        evaluate_steps = [score, _staging_cleanup(b, score, "endpoint")]

    deploy = _endpoint_job(b, "Deploy", "deploy", "deployment", model_name)
    if_steps: list[Any] = [deploy]
    if p.model_package_group:
        register = ModelStep(
            name="Register",
            step_args=builder.register(
                model_package_group_name=p.model_package_group,
                content_types=["application/json"],
                response_types=["application/json"],
                inference_instances=[P["InstanceType"]],
                # Batch Transform accepts no ml.inf1.*: only list transform instances where it can run
                transform_instances=[P["InstanceType"]] if p.evaluation == "transform" else None,
                approval_status=P["ModelApprovalStatus"],
                # v3's register takes no framework fields (v2 set PYTORCH + the DLC's torch): the image names both
                customer_metadata_properties={
                    "smneuron:target": p.target,
                    "smneuron:image": p.image_uri[-256:],
                },
            ),
        )
        deploy.add_depends_on([register])
        if_steps.insert(0, register)
    headline = (
        [("metrics.cosine_min", P["MinCosine"])]
        if p.task == "feature-extraction"
        else [("metrics.top1_agreement", P["MinTop1Agreement"])]
    )
    gate = _gate(
        b,
        "CheckAccuracy",
        score,
        evaluation,
        headline,
        if_steps,
        "AccuracyGateFailed",
        "The candidate missed the accuracy gate, so the endpoint was not updated:",
    )
    return b.pipeline([compile_step, create_model, *evaluate_steps, gate])


def _generation(b: _Builder) -> Pipeline:
    P = b.P
    compile_step, compile_result = _compile_step(
        b,
        "compile_generation",
        ["result", "reference"],
        ["--artifact-s3-uri", P["ArtifactS3Uri"], "--max-new-tokens", P["MaxNewTokens"].to_string()],
    )

    def compiled(path: str) -> JsonGet:
        return JsonGet(step_name=compile_step.name, property_file=compile_result, json_path=path)

    # uncompressed S3 model data: the vLLM container reads the weights directory as it is
    model_data = {
        "S3DataSource": {"S3Uri": compiled("model_data"), "S3DataType": "S3Prefix", "CompressionType": "None"}
    }
    create_model, _ = b.create_model(model_data)
    model_name = create_model.properties.ModelName
    evaluation = PropertyFile(name="Evaluation", output_name="evaluation", path="evaluation.json")
    staging = _staging_evaluate(
        b,
        "staging_generation",
        ("reference", b.output_uri(compile_step, "reference")),
        model_name,
        evaluation,
        [
            "--max-new-tokens",
            P["MaxNewTokens"].to_string(),
            "--min-prefix-match",
            P["MinPrefixMatch"].to_string(),
            "--min-first-tokens-match",
            P["MinFirstTokensMatch"].to_string(),
            "--first-tokens",
            P["FirstTokens"].to_string(),
            "--max-perplexity-diff",
            P["MaxPerplexityDiff"].to_string(),
            "--top-logprobs",
            P["TopLogprobs"].to_string(),
            "--min-logit-match",
            P["MinLogitMatch"].to_string(),
            "--divergence-tol",
            P["DivergenceTolerance"].to_string(),
            "--min-bhattacharyya",
            P["MinBhattacharyya"].to_string(),
            "--min-task-exact-match",
            P["MinTaskExactMatch"],
        ],
    )
    # smneuron's apply in a job (as the encoders' Deploy): the endpoint if missing, a rolling update of the copies with
    # the 5XX alarm as auto-rollback, copy autoscaling reconciled; an InferenceComponentStep can only create
    deploy = _endpoint_job(b, "Deploy", "deploy_generation", "deployment", model_name)
    gate = _gate(
        b,
        "CheckAgreement",
        staging,
        evaluation,
        [("metrics.prefix_match_mean", P["MinPrefixMatch"])],
        [deploy],
        "AgreementGateFailed",
        "The candidate's generations disagree with the reference, so the endpoint was not updated:",
    )
    return b.pipeline([compile_step, create_model, staging, _staging_cleanup(b, staging, "component"), gate])


def _parameters(p: Any) -> list[Any]:
    d = p.defaults
    common = [
        ParameterString("ModelSourceS3Uri", default_value=d["ModelSourceS3Uri"]),
        ParameterString("EvaluationDataS3Uri", default_value=d["EvaluationDataS3Uri"]),
        ParameterString("InstanceType", default_value=d["InstanceType"], enum_values=p.instance_choices),
        ParameterString("EndpointName", default_value=d["EndpointName"]),
    ]
    return [*common, *_KIND_PARAMETERS[kind_of(p)](d)]


def _generation_parameters(d: dict) -> list[Any]:
    return [
        # "none": compile from ModelSourceS3Uri; else the s3:// prefix of an artifact compiled before
        ParameterString("ArtifactS3Uri", default_value=d["ArtifactS3Uri"]),
        ParameterInteger("MaxNewTokens", default_value=d["MaxNewTokens"]),
        ParameterFloat("MinPrefixMatch", default_value=d["MinPrefixMatch"]),
        ParameterInteger("FirstTokens", default_value=d["FirstTokens"]),
        ParameterFloat("MinFirstTokensMatch", default_value=d["MinFirstTokensMatch"]),
        ParameterFloat("MaxPerplexityDiff", default_value=d["MaxPerplexityDiff"]),
        # Neuron's own criteria (smneuron.evaluation.logits): top-k logit matching and Bhattacharyya similarity
        ParameterInteger("TopLogprobs", default_value=d["TopLogprobs"]),
        ParameterFloat("MinLogitMatch", default_value=d["MinLogitMatch"]),
        ParameterFloat("DivergenceTolerance", default_value=d["DivergenceTolerance"]),
        ParameterFloat("MinBhattacharyya", default_value=d["MinBhattacharyya"]),
        ParameterString("MinTaskExactMatch", default_value=d["MinTaskExactMatch"]),  # "none": no task floor
    ]


def _encoder_parameters(d: dict) -> list[Any]:
    return [
        ParameterString("Buckets", default_value=d["Buckets"]),
        ParameterInteger("BatchSize", default_value=d["BatchSize"]),
        ParameterString("AutoCast", default_value=d["AutoCast"], enum_values=["none", "matmult", "all"]),
        ParameterString(
            "AutoCastType", default_value=d["AutoCastType"], enum_values=["bf16", "fp16", "tf32", "fp8_e4m3"]
        ),
        ParameterFloat("MinTop1Agreement", default_value=d["MinTop1Agreement"]),
        ParameterFloat("MinCosine", default_value=d["MinCosine"]),
        ParameterString("MinAccuracy", default_value=d["MinAccuracy"]),  # "none": no accuracy gate
        ParameterString("MaxAbsDiff", default_value=d["MaxAbsDiff"]),  # "none": no max-abs-diff gate
        ParameterString(
            "ModelApprovalStatus",
            default_value=d["ModelApprovalStatus"],
            enum_values=["Approved", "PendingManualApproval"],
        ),
    ]


# each kind's graph and parameters: this stage's half of the kind strategy (smneuron.artifact.kind)
_GRAPHS = {ENCODER: _encoder, GENERATION: _generation}
_KIND_PARAMETERS = {ENCODER: _encoder_parameters, GENERATION: _generation_parameters}
