"""`smneuron pipeline run`: the definition executed on this machine, end to end."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest
from conftest import local_kw

from smneuron.specs.models import ProjectFile

pytestmark = pytest.mark.e2e  # servers, subprocesses or the embedded service: not in the fast loop

TEXTS = [
    "the cat sat on the mat",
    "hello world",
    "a quick brown fox jumps",
    "models on inferentia",
    "good morning to you",
    "the weather is bad today",
    "compile once, serve everywhere",
    "short",
]


def _data(tmp_path, label=None):
    path = tmp_path / "eval.jsonl"
    path.write_text(
        "".join(json.dumps({"inputs": t, **({"label": label} if label else {})}) + "\n" for t in TEXTS)
    )
    return path


def _project(task, **pipeline):
    return ProjectFile.model_validate(
        {
            "model_name": "tiny",
            "endpoint": {"name": "tiny-prod"},
            "compile": {"task": task, "buckets": [16, 32], "batch_size": 4},
            "pipeline": {"model_package_group": "tiny-models", **pipeline},
        }
    )


def test_tiny_classifier_passes_the_gate_registers_and_deploys(tiny_classifier, tmp_path):
    from smneuron.local.pipeline.runner import run_local

    details = {}
    run = run_local(
        _project("text-classification"),
        tiny_classifier,
        _data(tmp_path),
        work_dir=tmp_path / "w",
        on_step=lambda s: details.setdefault(s.name, s.detail),
    )
    assert run.status == "Succeeded", run.failure_reason
    seen = list(details)
    assert seen == [
        "Compile",
        "CreateModel",
        "EvaluateTransform",
        "Score",
        "CheckAccuracy",
        "Register",
        "Deploy",
    ]
    assert run.evaluation["passed"] and run.evaluation["count"] == len(TEXTS)
    assert run.evaluation["metrics"]["top1_agreement"] == 1.0  # cpu candidate vs cpu reference
    assert run.deployment["endpoint_name"] == "tiny-prod" and run.deployment["status"] == "InService"
    # the Deploy job serves the Model it evaluated (it once created a second Model with a fresh environment)
    created = details["CreateModel"]
    assert run.deployment["model_name"] == created and run.deployment["served_model_name"] == created
    assert run.deployment["models_created"] == []
    # the transform job (the embedded SageMaker's, as `smneuron transform` runs) answered every request line through
    # the production handler: the Score step's copy of its output
    out = next((tmp_path / "w" / "Score").rglob("*.out")).read_text().splitlines()
    assert len(out) == len(TEXTS) and all(isinstance(json.loads(line)[0], list) for line in out)
    compiled = json.loads((tmp_path / "w" / "Compile" / "output" / "result" / "compile.json").read_text())
    assert compiled["model_data"] == run.deployment["model_data"]
    # a cpu candidate is its own reference: the Compile job compiled the model once (twice, the same graphs, before)
    assert compiled["reference"] == "the candidate's artifact"


def test_a_failing_job_names_its_step_and_log(tiny_classifier, tmp_path):
    from smneuron.local.pipeline.runner import run_local

    data = tmp_path / "eval.jsonl"
    data.write_text('{"text": "no inputs field"}\n')
    run = run_local(_project("text-classification"), tiny_classifier, data, work_dir=tmp_path / "w")
    assert run.status == "Failed" and run.failure_reason.startswith("Step Compile: the job exited with 1")
    assert 'each line needs an "inputs" field' in run.failure_reason


@pytest.mark.integration
def test_minilm_pipeline_from_the_cli(minilm_dir, tmp_path):
    """The real all-MiniLM-L6-v2 through every step from the CLI. One bucket: the evaluation texts are all under 16
    tokens, so the default's 64 and 128 were compiled, packaged and warmed by each of five model servers and never
    served (the defaults' buckets are compile's tests' to hold)."""
    from conftest import run_cli

    code, out, err = run_cli(
        "pipeline", "run", "--model", str(minilm_dir), "--data", str(_data(tmp_path)), "--param", "Buckets=32",
        "--json",
    )  # fmt: skip
    result = json.loads(out)
    assert code == 0, (result.get("failure_reason"), err)
    assert result["evaluation"]["task"] == "feature-extraction"
    # the plan's note says the definition's default shapes; the run says what it was given over them
    assert (
        "this run's parameters over the definition's defaults: Buckets=32 (default 32,64,128)"
        in result["notes"]
    )
    assert result["evaluation"]["metrics"]["cosine_min"] >= 0.9999
    assert result["deployment"]["status"] == "InService"


def test_an_impossible_threshold_is_refused_before_anything_runs(tiny_encoder, tmp_path):
    """MaxAbsDiff=-1 used to run the whole pipeline to a gate nothing could pass (or, as MinCosine=1.01, to a
    traceback in the Score job's log): now the range is said up front."""
    from conftest import run_cli

    code, out, err = run_cli(
        "pipeline", "run", "--local", "--model", str(tiny_encoder), "--data", str(_data(tmp_path)),
        "--param", "MaxAbsDiff=-1", "--json",
    )  # fmt: skip
    assert code == 1 and out == ""
    assert "`pipeline run --local` is now `pipeline run`" in err  # the old spelling still works, and says so
    assert (
        "Pipeline parameter MaxAbsDiff='-1' is not a valid threshold" in err
        and "greater than or equal to 0" in err
    )


def test_wheel_for_jobs_is_deterministic_and_installable(tmp_path):
    import subprocess
    import sys

    from smneuron.pipeline.code_bundle import build_wheel

    a, b = build_wheel(tmp_path / "a"), build_wheel(tmp_path / "b")
    assert a.read_bytes() == b.read_bytes()
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--quiet",
            "--target",
            str(target),
            str(a),
        ],
        check=True,
    )
    probe = "import smneuron.artifact.resources as r; print(r.pipelines_dir(), r.inference_code_dir())"
    # -S and another cwd: neither the editable install nor the checkout can answer for the wheel
    out = subprocess.run(
        [sys.executable, "-S", "-c", probe],
        env={"PYTHONPATH": str(target)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"{target}/smneuron/_bundled/pipelines" in out and "_bundled/inference_code" in out
    assert (target / "smneuron" / "_bundled" / "pipelines" / "steps" / "score.py").is_file()


PROMPTS = [
    "the capital of france is",
    "john works at google in",
    "i really loved this movie and",
    "the weather today is sunny but",
    "mary lives in london with",
    "amazon is a company founded in",
]


def _generation_run(tiny_llama, tmp_path, **kw):
    from smneuron.local.pipeline.runner import run_local

    data = tmp_path / "prompts.jsonl"
    data.write_text("".join(json.dumps({"inputs": t}) + "\n" for t in PROMPTS))
    project = ProjectFile.model_validate(
        {
            "model_name": "tiny-llm",
            "endpoint": {"name": "tiny-llm-prod"},
            "compile": {"task": "text-generation", "sequence_length": 128, "batch_size": 2, "dtype": "fp32"},
            "pipeline": {"name": "tiny-llm-pipeline"},
        }
    )
    return run_local(project, tiny_llama, data, work_dir=tmp_path / "w", **kw)


def test_text_generation_passes_the_agreement_gate_and_deploys_the_evaluated_model(tiny_llama, tmp_path):
    run = _generation_run(tiny_llama, tmp_path)
    assert run.status == "Succeeded", run.failure_reason
    assert [s.name for s in run.steps] == [
        "Compile",
        "CreateModel",
        "StagingEvaluate",
        "CheckAgreement",
        "Deploy",
    ]
    m = run.evaluation["metrics"]
    assert run.evaluation["task"] == "text-generation" and run.evaluation["count"] == len(PROMPTS)
    assert m["prefix_match_mean"] == 1.0 and m["first_tokens_match"] == 1.0  # same weights, greedy
    assert m["perplexity_rel_diff"] < 1e-4  # the served copy's prompt log-probabilities (echo + logprobs)
    # Neuron's criteria: every teacher-forced position within the top-k tolerances, the same distributions
    assert m["logit_match"] == 1.0 and m["bhattacharyya_mean"] >= 0.999999
    said = run.evaluation["summary"]
    assert "logit_match 1 >= 1 (min_logit_match)" in said and "top-50, top-1000, all not checked" in said
    created = next(s for s in run.steps if s.name == "CreateModel").detail
    assert run.deployment["model_name"] == created and run.deployment["status"] == "InService"
    # what bills afterwards: the production endpoint and its component, no staging endpoint
    assert run.left_running == ["endpoint tiny-llm-prod", "inference component tiny-llm-prod-ic"]


def test_text_generation_fails_at_the_gate_when_the_served_model_has_other_weights(tiny_llama, tmp_path):
    from smneuron.compilation.generation import compile_generation
    from smneuron.local.tiny_model import build_tiny_llama
    from smneuron.specs.models import CompileSpec

    other = build_tiny_llama(tmp_path / "other", seed=1)
    spec = CompileSpec(task="text-generation", target="cpu", sequence_length=128, batch_size=2, dtype="fp32")
    artifact = compile_generation(other, tmp_path / "other-artifact", spec).out_dir
    run = _generation_run(tiny_llama, tmp_path, artifact=artifact)
    assert run.status == "Failed"
    assert [s.name for s in run.steps][-2:] == ["CheckAgreement", "AgreementGateFailed"]
    m = run.evaluation["metrics"]
    assert m["prefix_match_mean"] < 0.9
    # measured, though near-uniform random models differ little in perplexity (about 2 % here)
    assert m["perplexity_candidate"] != m["perplexity_reference"]
    assert run.failure_reason.startswith(
        "The candidate's generations disagree with the reference, so the endpoint was not updated: FAILED: "
        f"prefix_match_mean {m['prefix_match_mean']:.6g} < 0.9 (min_prefix_match)"
    )
    assert "First differences: " in run.failure_reason
    # the logit gates fail too, and the failure names the first mismatching position with both tokens' log-probs
    assert m["logit_match"] < 1.0 and m["bhattacharyya_mean"] < 0.99
    assert "logit_match" in run.failure_reason and "First logit mismatch: prompt " in run.failure_reason
    assert re.search(
        r"reference '.*' \(id \d+, logprob -?\d+\.\d{4}\), served '.*' \(id \d+, logprob", run.failure_reason
    )
    assert run.deployment is None and run.left_running == []  # the staging component went with the run


def test_a_scheduled_redeploy_rolls_the_copies_and_keeps_copy_autoscaling(
    smneuron_cli, tiny_llama, tmp_path, monkeypatch
):
    """Two runs against one embedded SageMaker (`local up`), the second with other weights: its Deploy job rolls the
    copies onto the new Model (the component keeps its name) and copy autoscaling is registered after each run."""
    import boto3

    from smneuron.local.pipeline.runner import run_local
    from smneuron.local.tiny_model import build_tiny_llama

    smneuron_cli("local", "up")
    url = json.loads(smneuron_cli("local", "status", "--json").stdout)["url"]
    monkeypatch.setenv(
        "SMNEURON_STATE_DIR", str(tmp_path / "state")
    )  # run_local finds the service's credentials
    kw = local_kw(url)
    sm, aas = boto3.client("sagemaker", **kw), boto3.client("application-autoscaling", **kw)
    data = tmp_path / "prompts.jsonl"
    data.write_text("".join(json.dumps({"inputs": t}) + "\n" for t in PROMPTS))
    project = ProjectFile.model_validate(
        {
            "model_name": "tiny-llm",
            "endpoint": {
                "name": "tiny-llm-prod",
                "generation": {"copies": 2, "min_copies": 1, "max_copies": 2, "rolling_wait_s": 1},
            },
            "compile": {"task": "text-generation", "sequence_length": 128, "batch_size": 2, "dtype": "fp32"},
            "pipeline": {"name": "tiny-llm-pipeline"},
        }
    )

    def targets() -> list[tuple]:
        found = aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"]
        return [(t["ResourceId"], t["MinCapacity"], t["MaxCapacity"]) for t in found]

    served = []
    for i, model in enumerate([tiny_llama, build_tiny_llama(tmp_path / "retrained", seed=1)]):
        run = run_local(project, model, data, work_dir=tmp_path / f"w{i}", aws_url=url)
        assert run.status == "Succeeded", run.failure_reason
        created = next(s for s in run.steps if s.name == "CreateModel").detail
        component = sm.describe_inference_component(InferenceComponentName="tiny-llm-prod-ic")
        assert component["Specification"]["ModelName"] == created == run.deployment["served_model_name"]
        assert targets() == [("inference-component/tiny-llm-prod-ic", 1, 2)]  # registered, and kept
        served.append(created)
    assert served[0] != served[1]
    rolled = component["LastDeploymentConfig"]["RollingUpdatePolicy"]  # the second run rolled the copies
    assert rolled["MaximumBatchSize"] == {"Type": "COPY_COUNT", "Value": 1} and run.deployment[
        "rolling_batches"
    ] == [1, 1]
    assert [c["InferenceComponentName"] for c in sm.list_inference_components()["InferenceComponents"]] == [
        "tiny-llm-prod-ic"
    ]

    # a third run whose rollback fires: the 5XX alarm goes into ALARM while the copies roll; the run ends Failed
    # with the alarm's name, and every copy serves the second run's Model again
    cw = boto3.client("cloudwatch", **kw)
    slow = project.model_copy(deep=True)
    slow.endpoint.generation.rolling_wait_s = 30  # the bake the alarm fires in
    fired = threading.Event()

    def fire_when_rolling() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not fired.is_set():
            c = sm.describe_inference_component(InferenceComponentName="tiny-llm-prod-ic")
            if c["InferenceComponentStatus"] == "Updating":
                cw.set_alarm_state(
                    AlarmName="smneuron-tiny-llm-prod-5xx", StateValue="ALARM", StateReason="test"
                )
                fired.set()
            time.sleep(0.2)

    watcher = threading.Thread(target=fire_when_rolling, daemon=True)
    watcher.start()
    run = run_local(
        slow, build_tiny_llama(tmp_path / "worse", seed=2), data, work_dir=tmp_path / "w2", aws_url=url
    )
    watcher.join(5)
    cw.set_alarm_state(AlarmName="smneuron-tiny-llm-prod-5xx", StateValue="OK", StateReason="test over")
    assert fired.is_set() and run.status == "Failed", run.failure_reason
    assert "smneuron-tiny-llm-prod-5xx" in run.failure_reason and "rolled back" in run.failure_reason
    component = sm.describe_inference_component(InferenceComponentName="tiny-llm-prod-ic")
    assert (
        component["Specification"]["ModelName"] == served[1]
        and component["InferenceComponentStatus"] == "InService"
    )
    assert component["RuntimeConfig"]["CurrentCopyCount"] == 2
    answer = smneuron_cli(
        "--local",
        "invoke",
        "tiny-llm-prod",
        "hello",
        "--stream",
        "--max-tokens",
        "8",
        "--seed",
        "0",
        "--json",
    ).stdout
    # the old copies keep serving (a fixed seed: a sampled answer of a random model may be 8 tokens that print nothing)
    assert json.loads(answer)["pieces"] > 0
