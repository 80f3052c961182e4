"""The SageMaker Pipeline definition: compile -> create model -> evaluate on Neuron -> gate -> deploy.

Built with the SageMaker Python SDK v2 workflow API from a ``PipelinePlan`` (smneuron/pipeline.py
computes it; this module only turns it into steps). This is the only module of smneuron that imports
``sagemaker`` (the optional ``pipeline`` extra): the SDK session, the Model of the CreateModel step
and the schedule's ``put_triggers`` all live here. Every job runs ``entry.py``, which installs the
smneuron wheel that travels with the job and runs ``steps/<step>.py``: the steps call smneuron's
own compile, package, upload, evaluation and deploy functions, never a second implementation.

    Compile (Processing, CPU, target DLC) --> CreateModel (ModelStep, no repack)
      inf2: --> EvaluateTransform (Batch Transform on ml.inf2) --> Score (Processing, CPU)
      inf1: --> StagingEvaluate (Processing: short-lived ml.inf1 endpoint, scored, deleted)
    --> CheckAccuracy (Condition on evaluation.json)
          pass: [Register (Model Registry)] --> Deploy (Processing: smneuron serves the Model that
                CreateModel made and the evaluation scored, by name: blue/green, autoscaling, alarms)
          fail: AccuracyGateFailed (Fail, quoting the metrics)
"""

from __future__ import annotations

import json
import logging
import os
import re
import warnings
from typing import Any

import sagemaker
from sagemaker.config import load_sagemaker_config
from sagemaker.model import Model
from sagemaker.processing import ProcessingInput, ProcessingOutput, ScriptProcessor
from sagemaker.transformer import Transformer
from sagemaker.workflow.condition_step import ConditionStep
from sagemaker.workflow.conditions import ConditionEquals, ConditionGreaterThanOrEqualTo
from sagemaker.workflow.execution_variables import ExecutionVariables
from sagemaker.workflow.fail_step import FailStep
from sagemaker.workflow.functions import Join, JsonGet
from sagemaker.workflow.model_step import ModelStep
from sagemaker.workflow.parameters import ParameterFloat, ParameterInteger, ParameterString
from sagemaker.workflow.pipeline import Pipeline
from sagemaker.workflow.pipeline_context import PipelineSession
from sagemaker.workflow.pipeline_definition_config import PipelineDefinitionConfig
from sagemaker.workflow.properties import PropertyFile
from sagemaker.workflow.retry import (
    SageMakerJobExceptionTypeEnum,
    SageMakerJobStepRetryPolicy,
    StepExceptionTypeEnum,
    StepRetryPolicy,
)
from sagemaker.workflow.steps import CacheConfig, ProcessingStep, TransformStep
from sagemaker.workflow.triggers import PipelineSchedule

IN, OUT = "/opt/ml/processing/input", "/opt/ml/processing/output"


def sdk_session(session: Any, *, pipeline: bool = False) -> Any:
    """A SageMaker SDK v2 session (or PipelineSession) on smneuron's boto3 clients and bucket."""
    os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    logging.getLogger("sagemaker.config").setLevel(logging.WARNING)  # "Not applying SDK defaults" noise
    warnings.filterwarnings("ignore", message="Running within a PipelineSession")
    logging.getLogger("sagemaker.workflow").setLevel(logging.ERROR)  # "Popping out 'ProcessingJobName'" notes
    logging.getLogger("sagemaker.telemetry").setLevel(logging.WARNING)  # its opt-out notice; we opt out below
    # the user's SDK defaults still apply; the SDK's usage telemetry (an HTTPS call to an AWS-owned
    # bucket on every create) does not: smneuron makes no network calls its user did not ask for
    config = load_sagemaker_config()
    config.setdefault("SchemaVersion", "1.0")
    config.setdefault("SageMaker", {}).setdefault("PythonSDK", {}).setdefault("Modules", {})[
        "TelemetryOptOut"
    ] = True
    _validate_sdk_config_once()
    kwargs: dict[str, Any] = {
        "boto_session": session.bound_boto_session(),  # the SDK's own clients keep to the session's endpoint
        "sagemaker_client": session.client("sagemaker"),
        "default_bucket": session.bucket_name,
        "sagemaker_config": config,
    }
    if pipeline:
        return PipelineSession(**kwargs)
    return sagemaker.Session(sagemaker_runtime_client=session.client("sagemaker-runtime"), **kwargs)


def _validate_sdk_config_once() -> None:
    """The SDK re-validates its whole config against its JSON schema on every config lookup (~0.3 s,
    dozens per pipeline definition) once the config is non-empty: validate each distinct config once."""
    import sagemaker.utils as sm_utils

    if getattr(sm_utils.validate_sagemaker_config, "smneuron_memoized", False):
        return
    original, seen = sm_utils.validate_sagemaker_config, set()

    def validate_once(config: Any = None) -> None:
        key = json.dumps(config, sort_keys=True, default=str)
        if key not in seen:
            original(config)
            seen.add(key)

    validate_once.smneuron_memoized = True  # type: ignore[attr-defined]
    sm_utils.validate_sagemaker_config = validate_once


def put_schedule(
    name: str, schedule: dict[str, Any], *, role_arn: str, session: Any, enabled: bool = True
) -> str:
    """Create or update the EventBridge Scheduler schedule that starts pipeline ``name``; its ARN."""
    pipeline = Pipeline(name=name, sagemaker_session=sdk_session(session))
    return pipeline.put_triggers(
        [PipelineSchedule(name=name, enabled=enabled, **schedule)], role_arn=role_arn
    )[0]


def build(plan: Any, session: Any) -> Pipeline:
    """The ``Pipeline`` for a ``smneuron.pipeline.runs.PipelinePlan`` on smneuron ``session``."""
    p = plan
    p.sm_session = sdk_session(session, pipeline=True)
    params = _parameters(p)
    P = {x.name: x for x in params}
    tags = [{"Key": k, "Value": v} for k, v in p.tags.items()]
    cache = CacheConfig(enable_caching=p.cache, expire_after=p.cache_expire_after)
    retries = [
        StepRetryPolicy(
            exception_types=[StepExceptionTypeEnum.THROTTLING, StepExceptionTypeEnum.SERVICE_FAULT],
            backoff_rate=2.0,
            interval_seconds=30,
            max_attempts=5,
        ),
        SageMakerJobStepRetryPolicy(
            exception_types=[
                SageMakerJobExceptionTypeEnum.CAPACITY_ERROR,
                SageMakerJobExceptionTypeEnum.RESOURCE_LIMIT,
                SageMakerJobExceptionTypeEnum.INTERNAL_ERROR,
            ],
            backoff_rate=2.0,
            interval_seconds=60,
            max_attempts=p.capacity_retries,
        ),
    ]

    def s3_out(*parts: str) -> Join:
        return Join(on="/", values=[p.output_prefix, ExecutionVariables.PIPELINE_EXECUTION_ID, *parts])

    def processor(step: str, instance_type: Any, role: str, volume: int) -> ScriptProcessor:
        return ScriptProcessor(
            role=role,
            image_uri=p.image_uri,
            command=["python3"],
            instance_type=instance_type,
            instance_count=1,
            volume_size_in_gb=volume,
            env=p.job_environment,
            base_job_name=f"smneuron-{step}",
            tags=tags,
            sagemaker_session=p.sm_session,
            max_runtime_in_seconds=p.max_runtime_in_seconds,
        )

    def common_inputs() -> list[ProcessingInput]:
        return [
            ProcessingInput(source=p.wheel_uri, destination=f"{IN}/smneuron", input_name="smneuron"),
            ProcessingInput(source=p.config_uri, destination=f"{IN}/config", input_name="config"),
        ]

    # 1. Compile on CPU in the target's DLC; reference outputs of the uncompiled model on CPU.
    compile_result = PropertyFile(name="CompileResult", output_name="result", path="compile.json")
    compile_step = ProcessingStep(
        name="Compile",
        step_args=processor("compile", p.compile_instance_type, p.execution_role, p.compile_volume_gb).run(
            code=p.entry_uri,
            inputs=[
                *common_inputs(),
                ProcessingInput(source=P["ModelSourceS3Uri"], destination=f"{IN}/model", input_name="model"),
                ProcessingInput(source=P["EvaluationDataS3Uri"], destination=f"{IN}/data", input_name="data"),
            ],
            outputs=[
                ProcessingOutput(
                    output_name="result", source=f"{OUT}/result", destination=s3_out("compile", "result")
                ),
                ProcessingOutput(
                    output_name="reference",
                    source=f"{OUT}/reference",
                    destination=s3_out("compile", "reference"),
                ),
                ProcessingOutput(
                    output_name="requests",
                    source=f"{OUT}/requests",
                    destination=s3_out("compile", "requests"),
                ),
            ],
            arguments=[
                "compile",
                "--config",
                f"{IN}/config/pipeline.json",
                "--model-dir",
                f"{IN}/model",
                "--data-dir",
                f"{IN}/data",
                "--out-dir",
                OUT,
                "--buckets",
                P["Buckets"],
                "--batch-size",
                P["BatchSize"].to_string(),
                "--auto-cast",
                P["AutoCast"],
                "--auto-cast-type",
                P["AutoCastType"],
            ],
        ),
        property_files=[compile_result],
        cache_config=cache,
        retry_policies=retries,
    )
    model_data = JsonGet(step_name=compile_step.name, property_file=compile_result, json_path="model_data")
    reference_uri = compile_step.properties.ProcessingOutputConfig.Outputs["reference"].S3Output.S3Uri

    # 2. The SageMaker Model of the candidate: the same CreateModel request `smneuron deploy` makes
    # (PyTorch DLC image, smneuron's environment, no repack: the tarball already has code/). The
    # Transform / staging endpoint evaluate THIS Model, and Deploy serves it by name.
    model = Model(
        image_uri=p.image_uri,
        model_data=model_data,
        env=p.model_environment,
        role=p.execution_role,
        sagemaker_session=p.sm_session,
    )
    create_model = ModelStep(
        name="CreateModel",
        step_args=model.create(instance_type=P["InstanceType"], tags=tags),
        retry_policies=retries[:1],
    )

    # 3. Accuracy on the target hardware.
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
    eval_output = [
        ProcessingOutput(
            output_name="evaluation", source=f"{OUT}/evaluation", destination=s3_out("evaluate", "evaluation")
        )
    ]
    reference_input = ProcessingInput(
        source=reference_uri, destination=f"{IN}/reference", input_name="reference"
    )
    if p.evaluation == "transform":
        transformer = Transformer(
            model_name=create_model.properties.ModelName,
            instance_count=1,
            instance_type=P["InstanceType"],
            output_path=s3_out("evaluate", "transform"),
            accept="application/json",
            assemble_with="Line",
            strategy="SingleRecord",
            max_payload=6,
            max_concurrent_transforms=p.transform_concurrency,
            tags=tags,
            sagemaker_session=p.sm_session,
        )
        transform = TransformStep(
            name="EvaluateTransform",
            step_args=transformer.transform(
                data=compile_step.properties.ProcessingOutputConfig.Outputs["requests"].S3Output.S3Uri,
                content_type="application/json",
                split_type="Line",
            ),
            cache_config=cache,
            retry_policies=retries,
        )
        score = ProcessingStep(
            name="Score",
            step_args=processor("score", p.cpu_instance_type, p.execution_role, p.small_volume_gb).run(
                code=p.entry_uri,
                inputs=[
                    *common_inputs(),
                    reference_input,
                    ProcessingInput(
                        source=transform.properties.TransformOutput.S3OutputPath,
                        destination=f"{IN}/candidate",
                        input_name="candidate",
                    ),
                ],
                outputs=eval_output,
                arguments=[
                    "score",
                    "--config",
                    f"{IN}/config/pipeline.json",
                    "--reference-dir",
                    f"{IN}/reference",
                    "--candidate-dir",
                    f"{IN}/candidate",
                    "--out-dir",
                    f"{OUT}/evaluation",
                    *thresholds,
                ],
            ),
            property_files=[evaluation],
            cache_config=cache,
            retry_policies=retries,
        )
        evaluate_steps: list[Any] = [transform, score]
    else:
        score = ProcessingStep(
            name="StagingEvaluate",
            step_args=processor("staging", p.cpu_instance_type, p.pipeline_role, p.small_volume_gb).run(
                code=p.entry_uri,
                inputs=[*common_inputs(), reference_input],
                outputs=eval_output,
                arguments=[
                    "staging",
                    "--config",
                    f"{IN}/config/pipeline.json",
                    "--model-name",
                    create_model.properties.ModelName,
                    "--instance-type",
                    P["InstanceType"],
                    "--reference-dir",
                    f"{IN}/reference",
                    "--out-dir",
                    f"{OUT}/evaluation",
                    *thresholds,
                ],
            ),
            property_files=[evaluation],
            retry_policies=retries,
        )
        evaluate_steps = [score]

    # 4. Gate: the task's headline metric against its parameter, and every gate the scorer applied.
    def metric(path: str) -> JsonGet:
        return JsonGet(step_name=score.name, property_file=evaluation, json_path=path)

    headline = (
        ("metrics.cosine_min", P["MinCosine"])
        if p.task == "feature-extraction"
        else ("metrics.top1_agreement", P["MinTop1Agreement"])
    )
    deploy = ProcessingStep(
        name="Deploy",
        step_args=processor("deploy", p.cpu_instance_type, p.pipeline_role, p.small_volume_gb).run(
            code=p.entry_uri,
            inputs=common_inputs(),
            outputs=[
                ProcessingOutput(
                    output_name="deployment",
                    source=f"{OUT}/deployment",
                    destination=s3_out("deploy", "deployment"),
                )
            ],
            arguments=[
                "deploy",
                "--config",
                f"{IN}/config/pipeline.json",
                "--model-name",
                create_model.properties.ModelName,
                "--endpoint-name",
                P["EndpointName"],
                "--instance-type",
                P["InstanceType"],
                "--out-dir",
                f"{OUT}/deployment",
            ],
        ),
        retry_policies=retries[:1],
    )
    if_steps: list[Any] = [deploy]
    if p.model_package_group:
        register = ModelStep(
            name="Register",
            step_args=model.register(
                content_types=["application/json"],
                response_types=["application/json"],
                inference_instances=[P["InstanceType"]],
                # Batch Transform accepts no ml.inf1.*: only list transform instances where it can run
                transform_instances=[P["InstanceType"]] if p.evaluation == "transform" else None,
                model_package_group_name=p.model_package_group,
                approval_status=P["ModelApprovalStatus"],
                description=f"smneuron {p.task} model for {p.target}",
                customer_metadata_properties={"smneuron:target": p.target},
                # the registry's framework fields, as PyTorchModel set them (read from the DLC tag)
                framework="PYTORCH",
                framework_version=_torch_version(p.image_uri),
            ),
        )
        deploy.add_depends_on([register])
        if_steps.insert(0, register)
    gate = ConditionStep(
        name="CheckAccuracy",
        conditions=[
            ConditionGreaterThanOrEqualTo(left=metric(headline[0]), right=headline[1]),
            ConditionEquals(left=metric("passed"), right=True),
        ],
        if_steps=if_steps,
        else_steps=[
            FailStep(
                name="AccuracyGateFailed",
                error_message=Join(
                    on=" ",
                    values=[
                        "The candidate missed the accuracy gate, so the endpoint was not updated:",
                        metric("summary"),
                    ],
                ),
            )
        ],
    )
    return Pipeline(
        name=p.name,
        parameters=params,
        steps=[compile_step, create_model, *evaluate_steps, gate],
        sagemaker_session=p.sm_session,
        pipeline_definition_config=PipelineDefinitionConfig(use_custom_job_prefix=False),
    )


def _torch_version(image_uri: str) -> str | None:
    m = re.search(r":(\d+\.\d+\.\d+)-", image_uri)
    return m[1] if m else None


def _parameters(p: Any) -> list[Any]:
    d = p.defaults
    return [
        ParameterString("ModelSourceS3Uri", default_value=d["ModelSourceS3Uri"]),
        ParameterString("EvaluationDataS3Uri", default_value=d["EvaluationDataS3Uri"]),
        ParameterString("InstanceType", default_value=d["InstanceType"], enum_values=p.instance_choices),
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
        ParameterString("EndpointName", default_value=d["EndpointName"]),
        ParameterString(
            "ModelApprovalStatus",
            default_value=d["ModelApprovalStatus"],
            enum_values=["Approved", "PendingManualApproval"],
        ),
    ]
