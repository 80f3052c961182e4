"""Deploy, update, autoscale and tear down against moto (with smneuron's moto extensions)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from botocore.exceptions import ClientError
from conftest import run_cli

from smneuron.artifact.packaging import package
from smneuron.catalog import INSTANCE_TYPES
from smneuron.compilation.encoder import compile_model
from smneuron.deployment import corridor as dp
from smneuron.deployment import encoder_plan as deploy_plan
from smneuron.endpoints.autoscaling import parse_schedule
from smneuron.endpoints.handle import delete
from smneuron.errors import (
    AccessDeniedError,
    ConfigError,
    DeploymentRolledBackError,
    EndpointFailedError,
    QuotaExceededError,
    ThrottledError,
)
from smneuron.specs.models import EndpointSpec, ScalingSpec


@pytest.fixture(scope="module")
def cpu_artifact(tiny_classifier, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("deploy")
    compile_model(
        tiny_classifier, d / "a", target="cpu", task="text-classification", batch_size=2, buckets="16"
    )
    return d / "a"


def retarget(artifact: Path, tmp: Path, target: str, cores: int = 1) -> Path:
    """The same artifact with a manifest that says it was compiled for ``target`` (deploy never loads it)."""
    out = tmp / f"art-{target}"
    shutil.copytree(artifact, out)
    m = json.loads((out / "smneuron.json").read_text())
    m["compiler"].update(target=target, cores_per_model=cores)
    (out / "smneuron.json").write_text(json.dumps(m))
    return package(out, tmp / f"{target}.tar.gz").path


def leftovers(session) -> dict[str, int]:
    sm = session.client("sagemaker")
    return {
        "endpoints": len(sm.list_endpoints()["Endpoints"]),
        "configs": len(sm.list_endpoint_configs()["EndpointConfigs"]),
        "models": len(sm.list_models()["Models"]),
        "targets": len(
            session.client("application-autoscaling").describe_scalable_targets(ServiceNamespace="sagemaker")[
                "ScalableTargets"
            ]
        ),
        "alarms": len(session.client("cloudwatch").describe_alarms()["MetricAlarms"]),
    }


@pytest.mark.parametrize("instance", [n for n, t in INSTANCE_TYPES.items() if t.is_neuron])
def test_every_inferentia_size_gets_the_right_image_and_environment(
    instance, cpu_artifact, tmp_path, session, role
):
    t = INSTANCE_TYPES[instance]
    tarball = retarget(cpu_artifact, tmp_path, t.family)
    r = dp.deploy(
        tarball,
        EndpointSpec(name="ep", instance_type=instance, batch_size=8, max_batch_delay_ms=3),
        session=session,
    )
    sm = session.client("sagemaker")
    model = sm.describe_model(ModelName=r.model_name)
    c = model["PrimaryContainer"]
    repo = "pytorch-inference-neuron:" if t.family == "inf1" else "pytorch-inference-neuronx:"
    assert repo in c["Image"] and c["ModelDataUrl"] == r.model_data
    env = c["Environment"]
    n = str(t.neuron_cores)
    assert (
        env["SAGEMAKER_MODEL_SERVER_WORKERS"]
        == env["SAGEMAKER_TS_MIN_WORKERS"]
        == env["SAGEMAKER_TS_MAX_WORKERS"]
        == n
    )
    assert (env["SAGEMAKER_TS_BATCH_SIZE"], env["SAGEMAKER_TS_MAX_BATCH_DELAY"]) == ("8", "3")
    assert env["SAGEMAKER_PROGRAM"] == "inference.py" and env["NEURON_RT_NUM_CORES"] == "1"
    assert env["TS_DEFAULT_SERVICE_HANDLER"].endswith("smneuron_handler.py:handle")
    assert model["ExecutionRoleArn"] == role
    v = sm.describe_endpoint_config(EndpointConfigName=r.endpoint_config_name)["ProductionVariants"][0]
    assert v["InstanceType"] == instance and v["ContainerStartupHealthCheckTimeoutInSeconds"] >= 600
    tags = {
        x["Key"]: x["Value"]
        for x in sm.list_tags(ResourceArn=sm.describe_endpoint(EndpointName="ep")["EndpointArn"])["Tags"]
    }
    assert tags["smneuron:endpoint"] == "ep" and tags["smneuron:artifact"] == r.model_data


def test_artifact_instance_mismatch_is_refused_before_any_aws_call(cpu_artifact, tmp_path, session):
    inf1 = retarget(cpu_artifact, tmp_path, "inf1")
    calls = []
    session.client("s3").meta.events.register("before-call.*.*", lambda model, **_: calls.append(model.name))
    with pytest.raises(ConfigError, match="compiled for inf1 and cannot run on ml.inf2.xlarge"):
        dp.deploy(inf1, EndpointSpec(instance_type="ml.inf2.xlarge"), session=session)
    with pytest.raises(ConfigError, match="compiled for cpu"):
        dp.deploy(cpu_artifact, EndpointSpec(instance_type="ml.inf1.xlarge"), session=session)
    assert calls == []
    with pytest.raises(ConfigError, match="cannot share a core"):
        dp.deploy(inf1, EndpointSpec(instance_type="ml.inf1.xlarge"), session=session, workers=5)


def test_update_is_blue_green_idempotent_and_scaling_applies(cpu_artifact, tmp_path, session, role):
    from moto.sagemaker.models import sagemaker_backends

    tarball = retarget(cpu_artifact, tmp_path, "inf2")
    scaling = ScalingSpec(min_capacity=1, max_capacity=4, scheduled=[parse_schedule("cron(0 8 * * ? *)=2-6")])
    spec = EndpointSpec(name="ep", instance_type="ml.inf2.xlarge", latency_p99_alarm_ms=50)

    def planned(endpoint: EndpointSpec) -> str:  # what a dry run says it would do to the endpoint
        return " ".join(dp.preview(tarball, endpoint, scaling, session=session).notes)

    assert "Endpoint ep does not exist here: deploy creates it." in planned(spec)
    first = dp.deploy(tarball, spec, scaling, session=session)
    assert (
        f"Endpoint ep exists (InService on EndpointConfig {first.endpoint_config_name}, 1 x ml.inf2.xlarge): deploy "
        "leaves its instances as they are" in planned(spec)
    )
    again = dp.deploy(tarball, spec, scaling, session=session)
    assert again.unchanged and again.endpoint_config_name == first.endpoint_config_name
    assert leftovers(session)["configs"] == 1

    aas = session.client("application-autoscaling")
    (pol,) = aas.describe_scaling_policies(ServiceNamespace="sagemaker")["ScalingPolicies"]
    cfg = pol["TargetTrackingScalingPolicyConfiguration"]
    assert pol["ResourceId"] == "endpoint/ep/variant/AllTraffic"
    assert (
        cfg["PredefinedMetricSpecification"]["PredefinedMetricType"]
        == "SageMakerVariantInvocationsPerInstance"
    )
    assert cfg["TargetValue"] == 2 * 600 and cfg["ScaleInCooldown"] == 600
    (act,) = aas.describe_scheduled_actions(ServiceNamespace="sagemaker")["ScheduledActions"]
    assert act["Schedule"] == "cron(0 8 * * ? *)" and act["ScalableTargetAction"] == {
        "MinCapacity": 2,
        "MaxCapacity": 6,
    }

    canary = spec.model_copy(
        update={
            "batch_size": 16,
            "traffic_routing": spec.traffic_routing.model_copy(update={"type": "canary", "step_percent": 20}),
        }
    )
    said = planned(canary)
    updated = dp.deploy(tarball, canary, scaling, session=session)
    assert updated.is_update and updated.endpoint_config_name != first.endpoint_config_name
    assert f"deploy updates it to EndpointConfig {updated.endpoint_config_name} (UpdateEndpoint" in said
    sm = session.client("sagemaker")
    assert sm.describe_endpoint(EndpointName="ep")["EndpointConfigName"] == updated.endpoint_config_name
    backend = sagemaker_backends["123456789012"]["us-east-1"]
    policy = backend.endpoints["ep"].last_deployment_config
    routing = policy["BlueGreenUpdatePolicy"]["TrafficRoutingConfiguration"]
    assert routing["Type"] == "CANARY" and routing["CanarySize"] == {"Type": "CAPACITY_PERCENT", "Value": 20}
    assert {a["AlarmName"] for a in policy["AutoRollbackConfiguration"]["Alarms"]} == {
        "smneuron-ep-5xx",
        "smneuron-ep-latency-p99",
    }

    removed = delete("ep", session=session)
    assert any(r.startswith("endpoint config") for r in removed)
    assert leftovers(session) == {"endpoints": 0, "configs": 0, "models": 0, "targets": 0, "alarms": 0}
    assert delete("ep", session=session) == []  # idempotent


def test_a_failed_endpoint_raises_with_its_reason_and_leaves_nothing(cpu_artifact, tmp_path, session, role):
    def failed(parsed, **_):
        parsed["EndpointStatus"] = "Failed"
        parsed["FailureReason"] = "CapacityError: Unable to provision requested ML compute capacity."

    session.client("sagemaker").meta.events.register("after-call.sagemaker.DescribeEndpoint", failed)
    with pytest.raises(EndpointFailedError, match="CapacityError") as e:
        dp.deploy(
            retarget(cpu_artifact, tmp_path, "inf1"),
            EndpointSpec(name="ep", instance_type="ml.inf1.xlarge"),
            session=session,
        )
    assert e.value.failure_reason.startswith("CapacityError")
    assert leftovers(session) == {"endpoints": 0, "configs": 0, "models": 0, "targets": 0, "alarms": 0}


@pytest.mark.parametrize(
    "code,err",
    [
        ("AccessDeniedException", AccessDeniedError),
        ("ThrottlingException", ThrottledError),
        ("ResourceLimitExceeded", QuotaExceededError),
    ],
)
def test_injected_errors_are_typed_and_leave_no_orphans(
    code, err, cpu_artifact, tmp_path, session, role, monkeypatch
):
    sm = session.client("sagemaker")

    def boom(**_):
        raise ClientError({"Error": {"Code": code, "Message": "injected"}}, "CreateEndpoint")

    monkeypatch.setattr(sm, "create_endpoint", boom)
    with pytest.raises(err, match="injected"):
        dp.deploy(retarget(cpu_artifact, tmp_path, "inf2"), EndpointSpec(name="ep"), session=session)
    left = leftovers(session)
    assert (left["endpoints"], left["configs"], left["models"]) == (0, 0, 0)


def test_dry_run_prints_every_resource_setting_and_cost(cpu_artifact, tmp_path, session):
    tarball = retarget(cpu_artifact, tmp_path, "inf2")
    code, out, err = run_cli(
        "deploy",
        str(tarball),
        "--instance",
        "ml.inf2.24xlarge",
        "--name",
        "plan-me",
        "--min",
        "1",
        "--max",
        "3",
        "--dry-run",
    )
    assert code == 0, err
    for needle in [
        "nothing is created",
        "pytorch-inference-neuronx",
        "SAGEMAKER_MODEL_SERVER_WORKERS",
        "12",
        "smneuron-plan-me-5xx",
        "$7.790/hour",
        "/month at 1",
        "/month at 3",
    ]:
        assert needle in out, needle
    assert leftovers(session)["endpoints"] == 0
    code, out, _ = run_cli("deploy", str(tarball), "--instance", "ml.inf2.xlarge", "--dry-run", "--json")
    data = json.loads(out)
    assert data["monthly_usd_at_min"] == round(0.99 * 730, 2)


def test_cli_deploy_status_invoke_scale_delete(cpu_artifact, tmp_path, session, role):
    code, out, err = run_cli("deploy", str(cpu_artifact), "--instance", "ml.c6i.xlarge", "--name", "cli-ep")
    assert code == 0, err
    assert "created" in out
    code, out, _ = run_cli("status", "cli-ep", "--json")
    assert json.loads(out)["endpoint"]["EndpointStatus"] == "InService"
    code, out, _ = run_cli(
        "scale", "cli-ep", "--min", "1", "--max", "5", "--schedule", "cron(0 20 * * ? *)=1-1"
    )
    assert code == 0
    code, out, _ = run_cli("invoke", "cli-ep", "i loved it")
    assert code == 0  # moto's runtime answers with its canned body
    code, out, _ = run_cli("delete", "cli-ep", "--yes")
    assert code == 0 and "removed endpoint cli-ep" in out
    assert leftovers(session)["targets"] == 0
    # a second delete (or a mistyped name) succeeds, and says that nothing of that name is here
    code, out, _ = run_cli("delete", "cli-ep", "--yes")
    assert code == 0 and "Nothing to remove for 'cli-ep': no endpoint of that name here" in out


def test_waiter_backs_off_and_times_out():
    from smneuron.endpoints.handle import poll_intervals

    gen = poll_intervals()
    seq = [next(gen) for _ in range(15)]
    assert seq[0] == 0.25 and seq == sorted(seq) and seq[-1] == 20.0
    assert seq[:4] == [0.25, 0.375, 0.5625, 0.84375]  # fast at first: a local start-up is seen within it


def test_notebook_sdk_returns_an_endpoint_object(cpu_artifact, session, role):
    import smneuron

    ep = smneuron.deploy_model(
        cpu_artifact, EndpointSpec(name="nb", instance_type="ml.c6i.xlarge"), session=session
    ).endpoint
    assert repr(ep) == "Endpoint('nb')"
    assert ep.describe()["endpoint"]["EndpointStatus"] == "InService"
    assert ep.invoke('{"inputs": ["i loved it"]}').status == 200  # moto's runtime answers with a canned body
    assert "endpoint nb" in ep.delete()
    assert leftovers(session)["endpoints"] == 0


def test_an_update_that_sagemaker_rolled_back_is_reported_not_claimed(cpu_artifact, tmp_path, session, role):
    tarball = retarget(cpu_artifact, tmp_path, "inf2")
    spec = EndpointSpec(name="rb", instance_type="ml.inf2.xlarge")
    first = dp.deploy(tarball, spec, session=session)

    def rolled_back(parsed, **_):
        parsed["EndpointConfigName"] = first.endpoint_config_name  # SageMaker kept the old fleet

    session.client("sagemaker").meta.events.register("after-call.sagemaker.DescribeEndpoint", rolled_back)
    with pytest.raises(DeploymentRolledBackError, match="rolled back"):
        dp.deploy(tarball, spec.model_copy(update={"batch_size": 32}), session=session)


def test_failure_reports_the_last_cloudwatch_log_lines(cpu_artifact, tmp_path, session, role):
    logs = session.client("logs")
    group = "/aws/sagemaker/Endpoints/logs-ep"
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName="AllTraffic/i-123")
    now = int(__import__("time").time() * 1000)  # CloudWatch refuses events older than 14 days
    logs.put_log_events(
        logGroupName=group,
        logStreamName="AllTraffic/i-123",
        logEvents=[{"timestamp": now + i, "message": f"line {i}"} for i in range(3)]
        + [{"timestamp": now + 100, "message": "RuntimeError: Unknown builtin op: neuron::forward_1"}],
    )

    def failed(parsed, **_):
        parsed.update(
            EndpointStatus="Failed", FailureReason="The primary container did not pass the ping check."
        )

    session.client("sagemaker").meta.events.register("after-call.sagemaker.DescribeEndpoint", failed)
    with pytest.raises(EndpointFailedError) as e:
        dp.deploy(retarget(cpu_artifact, tmp_path, "inf2"), EndpointSpec(name="logs-ep"), session=session)
    assert e.value.log_lines[-1].endswith("neuron::forward_1") and "ping check" in str(e.value)


def test_model_copies_are_bounded_by_memory(cpu_artifact, tmp_path, session):
    inst = INSTANCE_TYPES["ml.inf2.xlarge"]  # 32 GiB accelerator, 16 GiB host
    deploy_plan.check_memory(inst, 3 * 2**30, 4)
    with pytest.raises(ConfigError, match="host memory"):
        deploy_plan.check_memory(inst, 3 * 2**30, 5)
    with pytest.raises(ConfigError, match="accelerator memory.*ml.inf1.xlarge has 8 GiB"):
        deploy_plan.check_memory(INSTANCE_TYPES["ml.inf1.xlarge"], 4 * 2**30, 2)


def test_scaling_target_from_a_bench_report(cpu_artifact, tmp_path, session, role):
    from smneuron.specs.models import target_from_report

    report = {
        "instance_count": 2,
        "runs": [
            {"requests_ok": 100, "throughput_rps": 40.0, "latency_ms": {"p99": 20.0}},
            {"requests_ok": 100, "throughput_rps": 90.0, "latency_ms": {"p99": 45.0}},
            {"requests_ok": 100, "throughput_rps": 120.0, "latency_ms": {"p99": 300.0}},
        ],
    }
    assert target_from_report(report, 50, headroom=0.5) == pytest.approx(90 / 2 * 60 * 0.5)
    with pytest.raises(ConfigError, match="best p99 20.0"):
        target_from_report(report, 10)
    f = tmp_path / "bench.json"
    f.write_text(json.dumps(report))
    code, out, err = run_cli(
        "deploy",
        str(cpu_artifact),
        "--instance",
        "ml.c6i.xlarge",
        "--name",
        "b",
        "--min",
        "1",
        "--max",
        "3",
        "--bench-report",
        str(f),
        "--slo-p99-ms",
        "50",
        "--dry-run",
        "--json",
    )
    assert code == 0, err
    cfg = json.loads(out)["autoscaling"]["policy"]["TargetTrackingScalingPolicyConfiguration"]
    assert cfg["TargetValue"] == pytest.approx(90 / 2 * 60 * 0.7)


def test_a_deploy_onto_an_endpoint_another_deploy_is_creating_says_so_and_changes_nothing(
    cpu_artifact, tmp_path, session, role
):
    """Issue 22 #7: two deploys of one name; the second said InService too and the last one won silently."""
    from smneuron.errors import DeployInProgressError
    from smneuron.local.aws.engine.embedded import set_endpoint_delay

    tarball = retarget(cpu_artifact, tmp_path, "inf2")
    set_endpoint_delay(600)  # the first deploy's endpoint stays Creating, as a real one does for minutes
    try:
        first = dp.deploy(tarball, EndpointSpec(name="twin", instance_type="ml.inf2.xlarge"), session=session,
                          wait=False)  # fmt: skip
        with pytest.raises(DeployInProgressError, match="twin is Creating: another deploy is in progress"):
            dp.deploy(tarball, EndpointSpec(name="twin", instance_type="ml.inf2.xlarge", batch_size=4),
                      session=session)  # fmt: skip
    finally:
        set_endpoint_delay(0)
    sm = session.client("sagemaker")
    assert sm.describe_endpoint(EndpointName="twin")["EndpointConfigName"] == first.endpoint_config_name
    assert leftovers(session)["configs"] == 1  # the second deploy's config was removed again


def test_two_deploys_of_one_name_at_once_one_wins_the_other_says_so(cpu_artifact, tmp_path, session, role):
    """Issue 22 #7, the race: both found no endpoint; the second CreateEndpoint got SageMaker's
    ValidationException (moto replaced the endpoint silently before) and says another deploy is in progress."""
    import threading

    from smneuron.artifact.staging import stage
    from smneuron.errors import DeployInProgressError
    from smneuron.local.aws.engine.embedded import set_endpoint_delay

    # staged once: in-process moto mishandles two concurrent PUTs of one key ("I/O operation on closed file")
    uri = stage(retarget(cpu_artifact, tmp_path, "inf2"), session=session).uri
    outcomes: dict[int, object] = {}

    def run(batch: int) -> None:
        try:
            outcomes[batch] = dp.deploy(uri, EndpointSpec(name="twin", instance_type="ml.inf2.xlarge",
                                        batch_size=batch), session=session, wait=False)  # fmt: skip
        except Exception as e:
            outcomes[batch] = e

    set_endpoint_delay(600)
    try:
        threads = [threading.Thread(target=run, args=(b,)) for b in (4, 8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    finally:
        set_endpoint_delay(0)
    won = [r for r in outcomes.values() if not isinstance(r, Exception)]
    lost = [r for r in outcomes.values() if isinstance(r, DeployInProgressError)]
    assert len(won) == 1 and len(lost) == 1, outcomes
    assert "another deploy is in progress" in str(lost[0])
    sm = session.client("sagemaker")
    assert sm.describe_endpoint(EndpointName="twin")["EndpointConfigName"] == won[0].endpoint_config_name
    assert leftovers(session)["configs"] == 1 and leftovers(session)["endpoints"] == 1


def test_torchserve_batches_follow_the_compiled_batch_size_also_from_s3(cpu_artifact, tmp_path, session):
    """A TorchServe batch goes to one worker, which runs it in passes of the compiled (static) batch size: batch 8 over
    a batch-2 artifact ran four passes in a row on one worker while the others could idle. The default is the compiled
    size, said in the plan; a larger --batch-size is kept and warned about; S3 model data carries the size."""
    from smneuron.artifact.staging import stage
    from smneuron.deployment.encoder_plan import plan

    local = stage(cpu_artifact, upload=False)
    assert local.batch_size == 2
    p = plan(local, EndpointSpec(name="b", instance_type="ml.c6i.xlarge"), region="us-east-1")
    assert p.environment["SAGEMAKER_TS_BATCH_SIZE"] == "2"
    assert any("TorchServe batch size 2: the artifact's compiled batch size" in n for n in p.notes), p.notes
    wide = plan(
        local, EndpointSpec(name="b", instance_type="ml.c6i.xlarge", batch_size=8), region="us-east-1"
    )
    assert wide.environment["SAGEMAKER_TS_BATCH_SIZE"] == "8"
    assert any("runs as 4 forward passes on one worker" in n for n in wide.notes), wide.notes

    staged = stage(cpu_artifact, session=session)  # uploaded: the size travels in the object's metadata
    again = stage(staged.uri, session=session)
    assert again.batch_size == 2
    code, out, err = run_cli("deploy", staged.uri, "--instance", "ml.c6i.xlarge", "--dry-run", "--json")
    assert code == 0, err
    assert json.loads(out)["environment"]["SAGEMAKER_TS_BATCH_SIZE"] == "2"
