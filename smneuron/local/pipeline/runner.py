"""`smneuron pipeline run`: execute the pipeline's own definition on this machine.

The pipeline is built and upserted exactly as for AWS (into the embedded AWS: moto on loopback),
then this module reads the definition back from the fake SageMaker and carries out each step the
way SageMaker would: processing jobs run the uploaded ``entry.py`` with their S3 inputs downloaded
and outputs uploaded, CreateModel / RegisterModel call the (fake) SageMaker API, the Batch
Transform step's CreateTransformJob runs on the embedded SageMaker's transform engine, as `smneuron transform`'s jobs
do (local model servers in place of Neuron hardware), and the
accuracy gate evaluates the definition's own conditions and property files. So what is tested is
the definition itself, its step scripts and smneuron's functions, with only the hardware replaced.
The compile target is ``cpu`` (the artifacts must run here); step caching is not simulated.

One module because it is one interpreter: the expression resolver, the step handlers and the S3 moves
share the run's properties and property files (graph.py and inputs.py hold what stands alone).
"""

from __future__ import annotations

import json
import operator
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smneuron.artifact.kind import ENCODER, GENERATION, kind_of
from smneuron.artifact.staging import stage
from smneuron.artifact.storage import ensure_bucket, parse_s3_uri
from smneuron.compilation.tasks import pipeline_task
from smneuron.display.cards import Card, Displayed
from smneuron.endpoints import components
from smneuron.errors import ConfigError, EndpointFailedError, PipelineFailedError
from smneuron.local.aws.data_plane.backing import Backer
from smneuron.local.aws.embedded_service import EmbeddedService
from smneuron.local.aws.engine.embedded import create_sagemaker_role, embedded_aws, local_credentials
from smneuron.local.pipeline.graph import dependencies, ordered_steps, path_get
from smneuron.local.pipeline.inputs import check_gates_have_data, upload_dir
from smneuron.local.pipeline.job_process import run_job
from smneuron.pipeline import runs as pipeline
from smneuron.session import Session
from smneuron.specs.models import ProjectFile

LOCAL_INSTANCE = "ml.c6i.xlarge"
_PROCESSING_ROOT = "/opt/ml/processing"


@dataclass
class StepRun:
    name: str
    type: str
    status: str
    seconds: float
    detail: str = ""


@dataclass(repr=False)
class LocalRun(Displayed):
    pipeline: str
    execution_arn: str
    status: str = "Executing"
    steps: list[StepRun] = field(default_factory=list)
    evaluation: dict | None = None
    deployment: dict | None = None
    failure_reason: str | None = None
    left_running: list[str] = field(default_factory=list)  # endpoints and components when the run ended
    notes: list[str] = field(default_factory=list)  # the plan's: the shapes it chose and why, its preflight

    def _card(self) -> Card:
        gate = self.evaluation or {}
        rows: list[tuple[str, Any]] = [("status", self.status)]
        if self.failure_reason:
            rows.append(("why", self.failure_reason))
        rows += [
            (
                f"gate {g['metric']}",
                f"{g['value']:.6g} {g['op']} {g['threshold']:g}: {'passed' if g['passed'] else 'FAILED'}",
            )
            for g in gate.get("gates", [])
            if g.get("value") is not None
        ]
        rows.append(("serving when the run ended", ", ".join(self.left_running) or "nothing"))
        return Card(
            title=f"pipeline {self.pipeline} (local run): {self.status}",
            brief=f"{self.pipeline!r}, {self.status}, {len(self.steps)} steps",
            rows=rows,
            table=(
                ["step", "type", "status", "seconds", "detail"],
                [[s.name, s.type, s.status, round(s.seconds, 1), s.detail] for s in self.steps],
            ),
        )


def run_local(
    project: ProjectFile | None,
    model_dir: str | Path,
    data: str | Path,
    *,
    parameters: dict[str, Any] | None = None,
    work_dir: str | Path | None = None,
    on_step: Callable[[StepRun], None] | None = None,
    artifact: str | Path | None = None,
    aws_url: str | None = None,
) -> LocalRun:
    """Run the whole pipeline locally with ``model_dir`` as the model source and ``data`` as the
    evaluation JSONL; returns the run (``status`` Succeeded or Failed with ``failure_reason``).

    ``aws_url``: an embedded SageMaker that is already running (`smneuron local up`'s) to run against, so that runs
    meet what earlier runs deployed (a scheduled redeploy, rehearsed); default: an embedded AWS of this run's own.

    ``artifact`` (text generation): a compiled artifact directory to serve instead of compiling
    ``model_dir`` (it is staged and passed as the ArtifactS3Uri parameter); the reference still comes
    from ``model_dir``.

    Raises:
        ConfigError: the model dir or data file is missing.
    """

    model_dir, data = Path(model_dir), Path(data)
    if not (model_dir / "config.json").is_file():
        raise ConfigError(f"{model_dir} is not a model directory (no config.json).")
    if not data.is_file():
        raise ConfigError(f"Evaluation data {data} does not exist.")
    proj = (project or ProjectFile()).model_copy(deep=True)
    proj.model = str(model_dir)  # the plan chooses the shapes `smneuron compile` would from this folder
    if proj.compile.task is None:
        proj.compile.task = pipeline_task(model_dir)[0]
    parameters = dict(parameters or {})
    _INPUT_CHECKS[kind_of(proj.compile)](proj, data, parameters, artifact)
    proj.endpoint.instance_type = LOCAL_INSTANCE  # cpu target: the artifacts must run on this machine
    proj.compile.target = "cpu"
    tmp = tempfile.TemporaryDirectory(prefix="smneuron-pipeline-") if work_dir is None else None
    work = Path(work_dir or tmp.name)  # type: ignore[union-attr]
    try:
        with _aws(aws_url) as url, local_credentials(url):
            session = Session.embedded(url)
            for role in {session.role_arn, proj.pipeline.role or session.role_arn}:
                create_sagemaker_role(session, role.rsplit("/", 1)[-1])

            ensure_bucket(session, session.bucket_name)
            base = f"{proj.aws.prefix}/pipeline-inputs"
            proj.pipeline.model_source_s3_uri = upload_dir(session, model_dir, f"{base}/model")
            proj.pipeline.evaluation_data_s3_uri = upload_dir(session, data, f"{base}/data")
            if artifact is not None:
                parameters["ArtifactS3Uri"] = stage(artifact, session=session, compression="none").uri
            up = pipeline.upsert(proj, session=session)
            arn = pipeline.start(up.name, parameters, session=session)
            sm = session.client("sagemaker")
            definition = json.loads(sm.describe_pipeline(PipelineName=up.name)["PipelineDefinition"])
            run = LocalRun(up.name, arn, notes=[*up.notes, *_overrides(definition, parameters)])
            runner = _Runner(session, definition, arn, parameters, work, url, run, on_step)
            try:
                runner.run(definition["Steps"])
                run.status = "Succeeded"
            except PipelineFailedError as e:
                run.status, run.failure_reason = "Failed", e.message
            run.left_running = _serving(sm)
            return run
    finally:
        if tmp is not None:
            tmp.cleanup()


def _overrides(definition: dict, parameters: dict[str, Any]) -> list[str]:
    """A note naming the parameters this run was given over the definition's defaults: the plan's notes say the
    defaults it chose (buckets 32,64,128), and this run compiled what ``--param`` said instead."""
    defaults = {p["Name"]: p.get("DefaultValue") for p in definition.get("Parameters", [])}
    given = [
        f"{name}={value} (default {defaults[name]})"
        for name, value in parameters.items()
        if name in defaults and str(value) != str(defaults[name]) and name != "ArtifactS3Uri"
    ]
    return [f"this run's parameters over the definition's defaults: {', '.join(given)}"] if given else []


@contextmanager
def _aws(url: str | None) -> Iterator[str]:
    """The embedded AWS the run uses: ``url``'s (its service backs the endpoints), or one of its own whose Deploy
    step's endpoint really serves, as in the embedded SageMaker."""
    if url is not None:
        yield url
        return
    service = EmbeddedService()
    with embedded_aws(service=service) as own:  # it stops the service's model servers as it leaves
        service.backer = Backer(own)
        yield own


class _Runner:
    """Carries out definition steps: resolves expressions, runs jobs, records properties."""

    def __init__(
        self,
        session: Session,
        definition: dict,
        execution_arn: str,
        overrides: dict[str, Any],
        work: Path,
        aws_url: str,
        run: LocalRun,
        on_step: Callable[[StepRun], None] | None,
    ) -> None:
        self.session, self.work, self.aws_url, self.run_record = session, work, aws_url, run
        self.s3, self.sm = session.client("s3"), session.client("sagemaker")
        self.params = {p["Name"]: p.get("DefaultValue") for p in definition.get("Parameters", [])}
        self.params.update(overrides)
        self.execution_id = execution_arn.rsplit("/", 1)[-1]
        self.properties: dict[str, dict] = {}
        self.property_files: dict[str, dict[str, Any]] = {}
        self.on_step = on_step or (lambda _: None)
        self._branch: list[dict] = []
        self.outcomes: dict[str, str] = {}  # step name -> Completed / Failed
        self.failures: list[str] = []
        self._names = {s["Name"] for s in _all_steps(definition["Steps"])}
        self._handlers = {
            "Processing": self._processing,
            "Model": self._model,
            "Transform": self._transform,
            "RegisterModel": self._register,
            "InferenceComponent": self._component,
            "Condition": self._condition,
            "Fail": self._fail,
        }

    # --- expressions -------------------------------------------------------------------------
    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if set(value) == {"Get"}:
            return self._get(value["Get"])
        if set(value) == {"Std:Join"}:
            j = value["Std:Join"]
            return j["On"].join(str(self.resolve(v)) for v in j["Values"])
        if set(value) == {"Std:JsonGet"}:
            j = value["Std:JsonGet"]
            step, _, name = j["PropertyFile"]["Get"].removeprefix("Steps.").partition(".PropertyFiles.")
            try:
                return path_get(self.property_files[step][name], j["Path"])
            except (KeyError, IndexError) as e:
                raise PipelineFailedError(f"{j['Path']} is missing from {name} of step {step}.") from e
        return {k: self.resolve(v) for k, v in value.items()}

    def _get(self, path: str) -> Any:
        if path.startswith("Parameters."):
            return self.params[path.removeprefix("Parameters.")]
        if path == "Execution.PipelineExecutionId":
            return self.execution_id
        if path.startswith("Execution."):
            return {
                "PipelineName": self.run_record.pipeline,
                "PipelineExecutionArn": self.run_record.execution_arn,
            }[path.removeprefix("Execution.")]
        step, _, rest = path.removeprefix("Steps.").partition(".")
        return path_get(self.properties[step], rest)

    # --- steps -------------------------------------------------------------------------------
    def run(self, steps: list[dict]) -> None:
        """Run ``steps`` (and the branch each condition picks) as SageMaker does: a step runs when every
        step it depends on reached the outcome it waits for (Completed, or Failed for a cleanup step);
        the first failure is raised once nothing else can run."""
        self._run(steps)
        if self.failures:
            raise PipelineFailedError(self.failures[0])

    def _run(self, steps: list[dict]) -> None:
        for step in ordered_steps(steps):
            if not self._runnable(step):
                continue
            if step["Type"] not in self._handlers:
                raise PipelineFailedError(f"Step {step['Name']}: type {step['Type']} cannot run locally.")
            start = time.perf_counter()
            try:
                detail = self._handlers[step["Type"]](step)
            except PipelineFailedError as e:
                self._record(step, "Failed", start, e.message)
                self.outcomes[step["Name"]] = "Failed"
                self.failures.append(e.message)
                continue
            self._record(step, "Succeeded", start, detail or "")
            self.outcomes[step["Name"]] = "Completed"
            if step["Type"] == "Condition":
                self._run(self._branch)

    def _runnable(self, step: dict) -> bool:
        def met(name: str, trigger: str) -> bool:
            outcome = self.outcomes.get(name)
            return outcome is not None and trigger in (outcome, "Any")

        return all(met(n, t) for n, t in dependencies(step, set(self.outcomes) | self._names).items())

    def _record(self, step: dict, status: str, start: float, detail: str) -> None:
        r = StepRun(step["Name"], step["Type"], status, time.perf_counter() - start, detail)
        self.run_record.steps.append(r)
        self.on_step(r)

    def _processing(self, step: dict) -> str:
        args = self.resolve(step["Arguments"])
        root = self.work / step["Name"]

        def local(p: Any) -> Any:  # the job's /opt/ml/processing/... paths, mapped into this step's work dir
            if isinstance(p, str) and p.startswith(_PROCESSING_ROOT):
                return str(root / p.removeprefix(_PROCESSING_ROOT).lstrip("/"))
            return p

        for inp in args.get("ProcessingInputs", []):
            self._download(inp["S3Input"]["S3Uri"], Path(local(inp["S3Input"]["LocalPath"])))
        outputs = args.get("ProcessingOutputConfig", {}).get("Outputs", [])
        for out in outputs:
            Path(local(out["S3Output"]["LocalPath"])).mkdir(parents=True, exist_ok=True)
        app = args["AppSpecification"]
        command = [
            sys.executable if c in ("python3", "python") else local(c) for c in app["ContainerEntrypoint"]
        ]
        command += [local(a) for a in app.get("ContainerArguments", [])]
        env = {
            **os.environ,
            **args.get("Environment", {}),
            "SMNEURON_ENDPOINT_URL": self.aws_url,
            "PYTHONUNBUFFERED": "1",
        }
        log = root / "job.log"
        code = run_job(command, env, root, log)
        if code != 0:
            tail = "\n".join(log.read_text().splitlines()[-15:])
            raise PipelineFailedError(
                f"Step {step['Name']}: the job exited with {code}. Last log lines:\n{tail}"
            )
        props: dict[str, Any] = {
            "ProcessingOutputConfig": {"Outputs": {}},
            "ProcessingJobStatus": "Completed",
        }
        for out in outputs:
            uri = out["S3Output"]["S3Uri"]
            self._upload(Path(local(out["S3Output"]["LocalPath"])), uri)
            props["ProcessingOutputConfig"]["Outputs"][out["OutputName"]] = {"S3Output": {"S3Uri": uri}}
        self.properties[step["Name"]] = props
        files = {}
        for pf in step.get("PropertyFiles", []):
            out = next(o for o in outputs if o["OutputName"] == pf["OutputName"])
            files[pf["PropertyFileName"]] = json.loads(
                (Path(local(out["S3Output"]["LocalPath"])) / pf["FilePath"]).read_text()
            )
        self.property_files[step["Name"]] = files
        return ", ".join(f"{o['OutputName']} -> {o['S3Output']['S3Uri']}" for o in outputs)

    def _model(self, step: dict) -> str:
        args = self.resolve(step["Arguments"])
        name = f"pipelines-{self.execution_id[:12]}-{step['Name'][:20]}-{int(time.time() * 1000) % 10**6}"
        self.sm.create_model(ModelName=name, **args)
        self.properties[step["Name"]] = {"ModelName": name}
        return name

    def _register(self, step: dict) -> str:
        args = self.resolve(step["Arguments"])
        args.pop("SkipModelValidation", None)
        arn = self.sm.create_model_package(**args)["ModelPackageArn"]
        self.properties[step["Name"]] = {"ModelPackageArn": arn}
        return arn

    def _component(self, step: dict) -> str:
        """InferenceComponentStep: create the component, or update it when one of that name exists."""
        args = self.resolve(step["Arguments"])
        name = args["InferenceComponentName"]
        if components.describe(self.session, name) is None:
            self.sm.create_inference_component(**args)
            verb = "created"
        else:
            self.sm.update_inference_component(
                InferenceComponentName=name,
                Specification=args["Specification"],
                RuntimeConfig=args["RuntimeConfig"],
            )
            verb = "updated"
        try:
            served = components.wait(self.session, name, timeout=1800)
        except (EndpointFailedError, TimeoutError) as e:
            raise PipelineFailedError(f"Step {step['Name']}: {e}") from e
        self.properties[step["Name"]] = served
        self.run_record.deployment = {
            "endpoint_name": args["EndpointName"],
            "component_name": name,
            "model_name": served["Specification"]["ModelName"],
            "status": served["InferenceComponentStatus"],
        }
        return f"{name} {verb} on {args['EndpointName']} serving {served['Specification']['ModelName']}"

    def _transform(self, step: dict) -> str:
        """Batch Transform: the step's CreateTransformJob, run by the embedded SageMaker's transform engine (one model
        server per instance, records batched as the job's BatchStrategy and MaxPayloadInMB say), followed to its end."""
        args = self.resolve(step["Arguments"])
        name = f"{step['Name'][:40]}-{uuid.uuid4().hex[:12]}"  # a job name SageMaker takes (63 characters at most)
        self.sm.create_transform_job(
            **{k: v for k, v in args.items() if k != "TransformJobName"}, TransformJobName=name
        )
        while (job := self.sm.describe_transform_job(TransformJobName=name))["TransformJobStatus"] in (
            "InProgress", "Stopping"):  # fmt: skip
            time.sleep(0.2)
        if job["TransformJobStatus"] != "Completed":
            raise PipelineFailedError(f"Step {step['Name']}: the transform job {name} ended "
                                      f"{job['TransformJobStatus']}: {job.get('FailureReason', '')}")  # fmt: skip
        self.properties[step["Name"]] = {
            "TransformOutput": {"S3OutputPath": args["TransformOutput"]["S3OutputPath"]},
            "TransformJobStatus": "Completed",
        }
        resources = args["TransformResources"]
        return (f"transform job {name}: {resources['InstanceCount']} x {resources['InstanceType']}, "
                f"{args.get('BatchStrategy', 'SingleRecord')}, {args.get('MaxConcurrentTransforms', 1)} at a time")  # fmt: skip

    def _condition(self, step: dict) -> str:
        args = step["Arguments"]
        results = [self._test(c) for c in args["Conditions"]]
        outcome = all(results)
        self.properties[step["Name"]] = {"Outcome": outcome}
        self._branch = args["IfSteps"] if outcome else args["ElseSteps"]
        return f"conditions {results} -> {'IfSteps' if outcome else 'ElseSteps'}"

    def _test(self, cond: dict) -> bool:
        kind = cond["Type"]
        if kind == "Not":
            return not self._test(cond["Condition"])
        if kind == "Or":
            return any(self._test(c) for c in cond["Conditions"])
        left = self.resolve(cond.get("LeftValue", cond.get("QueryValue")))
        if kind == "In":
            return left in [self.resolve(v) for v in cond["Values"]]
        right = self.resolve(cond["RightValue"])
        if kind != "Equals" or isinstance(right, (int, float)) and not isinstance(right, bool):
            left, right = float(left), float(right)
        ops = {
            "Equals": operator.eq,
            "GreaterThan": operator.gt,
            "GreaterThanOrEqualTo": operator.ge,
            "LessThan": operator.lt,
            "LessThanOrEqualTo": operator.le,
        }
        return bool(ops[kind](left, right))

    def _fail(self, step: dict) -> str:
        raise PipelineFailedError(
            str(self.resolve(step["Arguments"].get("ErrorMessage", "Fail step reached.")))
        )

    # --- S3 ----------------------------------------------------------------------------------
    def _download(self, uri: str, dest: Path, *, as_prefix: bool = False) -> Path:
        """An object lands in ``dest/<its name>`` (returned); a prefix's objects keep their relative paths."""

        bucket, key = parse_s3_uri(uri)
        dest.mkdir(parents=True, exist_ok=True)
        listed = self.s3.list_objects_v2(Bucket=bucket, Prefix=key).get("Contents", [])
        exact = [o for o in listed if o["Key"] == key]
        if exact and not as_prefix:
            target = dest / key.rsplit("/", 1)[-1]
            self.s3.download_file(bucket, key, str(target))
            return target
        for obj in listed:
            rel = obj["Key"][len(key) :].lstrip("/")
            if rel and not obj["Key"].endswith("/"):
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                self.s3.download_file(bucket, obj["Key"], str(dest / rel))
        return dest

    def _upload(self, local: Path, uri: str) -> None:

        bucket, key = parse_s3_uri(uri)
        for f in sorted(p for p in local.rglob("*") if p.is_file()):
            self.s3.upload_file(str(f), bucket, f"{key.rstrip('/')}/{f.relative_to(local).as_posix()}")
            if f.name == "evaluation.json":
                self.run_record.evaluation = json.loads(f.read_text())
            if f.name == "deployment.json":
                self.run_record.deployment = json.loads(f.read_text())


def _all_steps(steps: list[dict]) -> list[dict]:
    out = []
    for s in steps:
        out.append(s)
        if s["Type"] == "Condition":
            out += _all_steps(s["Arguments"].get("IfSteps", []) + s["Arguments"].get("ElseSteps", []))
    return out


def _serving(sm: Any) -> list[str]:
    """What bills when a run is over: every endpoint and inference component in the embedded SageMaker."""
    endpoints = [e["EndpointName"] for e in sm.list_endpoints().get("Endpoints", [])]
    found = [
        c["InferenceComponentName"] for c in sm.list_inference_components().get("InferenceComponents", [])
    ]
    return [f"endpoint {e}" for e in sorted(endpoints)] + [f"inference component {c}" for c in sorted(found)]


def _check_encoder_inputs(proj: ProjectFile, data: Path, parameters: dict, artifact: Any) -> None:
    check_gates_have_data(proj, data, parameters)  # an encoder's gates need labels or references in the data


def _check_generation_inputs(proj: ProjectFile, data: Path, parameters: dict, artifact: Any) -> None:
    if artifact is not None and not Path(artifact, "smneuron.json").is_file():
        raise ConfigError(f"{artifact} is not a compiled artifact (no smneuron.json).")


# what each kind's run checks of its inputs before anything runs
_INPUT_CHECKS = {ENCODER: _check_encoder_inputs, GENERATION: _check_generation_inputs}
