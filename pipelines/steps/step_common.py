"""What every step script shares: arguments, the pipeline config, thresholds, result files."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from smneuron.artifact.kind import GENERATION
from smneuron.artifact.staging import ModelData
from smneuron.deployment.apply import apply
from smneuron.deployment.corridor import generation_plan_for_model
from smneuron.deployment.generation_plan import GenerationPlan
from smneuron.endpoints.handle import delete, wait_for_endpoint
from smneuron.endpoints.naming import sanitize
from smneuron.errors import SmneuronError
from smneuron.evaluation import scoring as evaluation
from smneuron.session import Session
from smneuron.specs.models import CompileSpec, EndpointSpec, Thresholds, validate


def run(main: Callable[[], None]) -> None:
    """A step's entry point: a smneuron error (a setting the model cannot take, a missing input) ends the job with its
    paragraph, problem and fix, as the CLI says it, and the job's last log lines are that paragraph (they were a
    traceback ending in it); any other exception keeps its traceback."""
    try:
        main()
    except SmneuronError as e:
        print(f"Error: {e}", file=sys.stderr, flush=True)
        sys.exit(e.exit_code)


def parser(description: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--config", required=True, help="pipeline.json written by `smneuron pipeline upsert`")
    return ap


def serving_args(description: str) -> argparse.Namespace:
    """The arguments of a job that serves the evaluated Model on the production endpoint (the Deploy jobs)."""
    ap = parser(description)
    ap.add_argument("--model-name", required=True)
    ap.add_argument("--endpoint-name", required=True)
    ap.add_argument("--instance-type", required=True)
    ap.add_argument("--out-dir", required=True)
    return ap.parse_args()


def add_thresholds(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--min-top1-agreement", type=float, required=True)
    ap.add_argument("--min-cosine", type=float, required=True)
    ap.add_argument("--min-accuracy", default="none", help='a fraction, or "none" for no accuracy gate')
    ap.add_argument("--max-abs-diff", default="none", help='a bound, or "none" for no such gate')


def thresholds(args: argparse.Namespace) -> Thresholds:
    def optional(text: str) -> float | None:
        return None if str(text).strip().lower() in ("", "none") else float(text)

    return Thresholds(
        min_top1_agreement=args.min_top1_agreement,
        min_cosine=args.min_cosine,
        min_accuracy=optional(args.min_accuracy),
        max_abs_diff=optional(args.max_abs_diff),
    )


def reference_records(args: argparse.Namespace) -> list[evaluation.Record]:
    """The evaluation records the compile step passed on (``--reference-dir``)."""
    return evaluation.read_records(Path(args.reference_dir) / "records.jsonl")


def score_and_write(
    args: argparse.Namespace, task: str, candidate: list[Any], records: list[evaluation.Record]
) -> Path:
    """Score ``candidate`` against the compile step's reference; write ``evaluation.json`` to ``--out-dir``."""
    reference = evaluation.read_outputs(Path(args.reference_dir) / "reference.jsonl")
    result = evaluation.score(task, reference, candidate, records, thresholds(args))
    return write_json(Path(args.out_dir) / evaluation.EVALUATION_FILE, result.to_json())


def load_config(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    print(f"wrote {path}:\n{path.read_text()}", flush=True)
    return path


def one_file(directory: str | Path, pattern: str) -> Path:
    found = sorted(Path(directory).rglob(pattern))
    if len(found) != 1:
        raise SystemExit(f"expected one {pattern} in {directory}, found {[str(f) for f in found]}")
    return found[0]


def staging_name(execution_id: str) -> str:
    """The staging endpoint of one execution (RemoveStaging finds it by this name)."""
    return sanitize(f"smneuron-staging-{execution_id}")


def component_plan(
    config: dict, model_name: str, endpoint_name: str, instance_type: str
) -> tuple[Session, GenerationPlan]:
    """The plan `smneuron deploy` makes for serving the existing Model ``model_name`` as a component."""
    spec = validate(
        EndpointSpec,
        {**config["endpoint"], "name": endpoint_name, "instance_type": instance_type},
        source="pipeline parameters",
    )
    session = Session.from_env()
    return session, generation_plan_for_model(model_name, spec, session=session)


@contextmanager
def staging(config: dict, args: argparse.Namespace, *, kind: str) -> Iterator[str]:
    """A short-lived endpoint (encoders) or endpoint + one component (text generation) serving the
    candidate Model ``args.model_name``; everything of it is deleted on the way out, whatever happened."""
    session = Session.from_env()
    name = staging_name(args.execution_id)
    tags = [{"Key": "smneuron:endpoint", "Value": name}, {"Key": "smneuron:staging", "Value": "true"}]
    try:
        if kind == "component":
            one_copy = {"copies": 1, "min_copies": None, "max_copies": None, "max_instances": 1}
            endpoint = {**config["endpoint"], "generation": {**config["endpoint"]["generation"], **one_copy}}
            _, plan = component_plan(
                {**config, "endpoint": endpoint}, args.model_name, name, args.instance_type
            )
            plan.tags["smneuron:staging"] = "true"
            apply(plan, session=session, timeout=3600, on_status=_said("staging"))
        else:
            sm = session.client("sagemaker")
            sm.create_endpoint_config(
                EndpointConfigName=name,
                Tags=tags,
                ProductionVariants=[
                    {
                        "VariantName": "AllTraffic",
                        "ModelName": args.model_name,
                        "InitialInstanceCount": 1,
                        "InstanceType": args.instance_type,
                        "ContainerStartupHealthCheckTimeoutInSeconds": 1800,
                        "ModelDataDownloadTimeoutInSeconds": 1800,
                    }
                ],
            )
            sm.create_endpoint(EndpointName=name, EndpointConfigName=name, Tags=tags)
            wait_for_endpoint(name, session=session, timeout=3600, on_status=_said("staging"))
        yield name
    finally:
        try:
            print(f"[staging] removed: {', '.join(delete(name, session=session)) or 'nothing'}", flush=True)
        except Exception as e:  # RemoveStaging runs after a failed evaluation and tries again
            print(f"[staging] could not remove {name}: {e}", flush=True)


def _said(what: str) -> Any:
    return lambda status, seconds: print(f"[{what}] {status} after {seconds:.0f} s", flush=True)


def check_generation_matches(staged: ModelData, spec: CompileSpec) -> None:
    """A precompiled artifact must be what the project compiles: text generation with the same batch size,
    sequence length, tp and dtype (the container is configured from them)."""
    g = staged.generation
    if not GENERATION.holds(staged) or g is None:
        raise SystemExit(f"{staged.uri} is a {staged.task} artifact, not text generation.")
    got = (g.batch_size, g.sequence_length, g.tensor_parallel_size, g.dtype)
    want = (spec.batch_size, spec.sequence_length, spec.tensor_parallel_size, spec.dtype)
    if got != want:
        raise SystemExit(
            f"{staged.uri} was compiled with batch size, sequence length, tp, dtype = {got}; the project "
            f"compiles {want}. Set compile.* in smneuron.yaml to the artifact's settings, or drop ArtifactS3Uri."
        )
