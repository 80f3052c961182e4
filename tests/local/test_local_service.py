"""`smneuron local up`: deployed endpoints really serve on this machine, through the CLI as a user runs it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import boto3
import pytest
from conftest import alive, cmdline, local_kw, model_servers, nothing_is_left, service_processes, until
from contract import Recorder

pytestmark = pytest.mark.e2e  # servers, subprocesses or the embedded service: not in the fast loop


def _torchserve_java(state_dir) -> list[int]:
    """The TorchServe Java frontends this test's embedded SageMaker started (reparented when `torchserve --start`
    exits; other tests' stacks may run beside them)."""
    return [p for p in service_processes(state_dir) if "java" in cmdline(p)]


def test_local_up_deploy_invoke_scale_update_delete_down(smneuron_cli, tiny_classifier, tmp_path):
    from smneuron.compilation.encoder import compile_model

    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16,32")
    (tmp_path / "d.jsonl").write_text('{"inputs": "hello world"}\n{"inputs": "what a great film"}\n')
    # a shell with a proxy for AWS (a corporate laptop's): --local said the embedded SageMaker was not running, as
    # the calls to it went to the proxy; the service and its model servers inherit it (a dead proxy: nothing gets by)
    smneuron_cli.env.update(HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9")
    # from a project folder whose files share standard-library names: the service (`python -m`) imported them in
    # place of the standard library's (a secrets.py failed `local up`; a random.py killed its model servers' forkserver)
    project = tmp_path / "project"
    project.mkdir()
    for name in ("secrets", "random", "queue"):
        (project / f"{name}.py").write_text("raise SystemExit('the project file was imported')\n")
    # with the state folder given relative to it (the service, started in its own folder, made another there), an
    # AWS_PROFILE the config files lack and a config file that does not parse (moto, imported by the service, read
    # them and the service did not start)
    (project / "aws-config").write_text("[default\nregion = us-east-1\n")
    shell = {"AWS_PROFILE": "work", "AWS_CONFIG_FILE": str(project / "aws-config")}
    given = {"SMNEURON_STATE_DIR": "../state", **shell}
    up = json.loads(smneuron_cli("local", "up", "--json", cwd=project, also=given).stdout)
    assert up["started"] and up["url"].startswith("http://127.0.0.1:")
    assert json.loads(smneuron_cli("local", "up", "--json").stdout)["started"] is False  # once
    # what only a start does is refused of the running service, never dropped (it said "already running", exit 0)
    port = up["url"].rsplit(":", 1)[1]
    for asked, held in (("--engine torchserve", "--engine smneuron"), ("--llm-engine vllm", "--llm-engine stand-in"),
                        ("--port 1", f"--port {port}"), ("--fresh", "--fresh"), ("--restore-previous", "running")):  # fmt: skip
        refused = smneuron_cli("local", "up", *asked.split(), check=False)
        said = " ".join(refused.stderr.split())
        assert refused.returncode == 1 and held in said and "`smneuron local down`" in said, (asked, said)
    assert smneuron_cli("local", "up", "--engine", "smneuron").returncode == 0  # what it runs with: fine

    out = smneuron_cli(
        "--local", "deploy", str(tmp_path / "a"), "--instance", "ml.c6i.large", "--name", "ep", cwd=project
    )  # fmt: skip
    assert "created: InService" in out.stdout
    assert 'Invoke it with `smneuron --local invoke ep "some text"`' in out.stdout  # works as printed
    # the same shell: local mode reads no profile or config file (ProfileNotFound, ConfigParseError)
    answer = json.loads(smneuron_cli("--local", "invoke", "ep", "i loved it", "awful", also=shell).stdout)
    assert [set(a) for a in answer] == [{"label", "score"}] * 2  # the model's answer, not a placeholder
    # SMNEURON_LOCAL=1 from Python, nothing else set (it raised MissingRegionError): the SDK finds the service
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMNEURON_"))}
    env.update(SMNEURON_LOCAL="1", SMNEURON_STATE_DIR=str(tmp_path / "state"), AWS_CONFIG_FILE=str(tmp_path / "none"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))  # fmt: skip
    shown = smneuron_cli("--local", "status", "ep").stdout  # it said "workers ?" and no cost
    assert "1 per instance" in shown and "$0.119/hour (1 x $0.119" in shown
    # one price for every cost (issue 51 #4): with `prices:` in the project file, the dry run, status (table and
    # JSON), the list, the bench report and recommend all cost ml.c6i.large at $10/h; they said $0.119 but the plan
    project = tmp_path / "smneuron.yaml"
    project.write_text("prices:\n  ml.c6i.large: 10.0\n")
    cfg = ("--config", str(project), "--local")
    plan = json.loads(smneuron_cli(*cfg, "deploy", str(tmp_path / "a"), "--instance", "ml.c6i.large",
                                   "--name", "ep", "--dry-run", "--json").stdout)  # fmt: skip
    assert plan["hourly_usd"] == 10.0
    assert "Cost: $10.000/hour" in smneuron_cli(*cfg, "deploy", str(tmp_path / "a"), "--instance", "ml.c6i.large",
                                                "--name", "ep", "--dry-run").stdout  # fmt: skip
    assert "$10.000/hour (1 x $10.000, user override)" in smneuron_cli(*cfg, "status", "ep").stdout
    summary = json.loads(smneuron_cli(*cfg, "status", "ep", "--json").stdout)["summary"]
    assert (summary["hourly_usd"], summary["cost_per_hour_usd"], summary["kind"]) == (10.0, 10.0, "encoder")
    assert json.loads(smneuron_cli(*cfg, "list", "--json").stdout)[0]["hourly_usd"] == 10.0
    bench = json.loads(
        smneuron_cli(*cfg, "bench", "ep", "--data", str(tmp_path / "d.jsonl"), "--duration", "2",
                     "--rate-type", "concurrent", "--concurrencies", "2", "--processes", "2", "--warmup", "0",
                     "--cooldown", "0", "--json").stdout
    )  # fmt: skip
    # --processes 2: the second load generator is a process of its own, signing InvokeEndpoint with the same
    # credentials (the service verifies every signature): its requests count in the run, none failed
    assert bench["processes"] == 2 and bench["runs"][0]["requests_failed"] == 0
    assert bench["runs"][0]["concurrency"] == 2 and bench["runs"][0]["requests_ok"] > 0
    assert bench["instance_type"] == "ml.c6i.large" and bench["instance_count"] == 1
    assert (bench["hourly_usd"], bench["price_source"]) == (10.0, "user override")
    run = bench["runs"][0]
    assert run["cost_per_million_usd"] == pytest.approx(1e6 / run["throughput_rps"] * 10.0 / 3600)
    (tmp_path / "bench.json").write_text(json.dumps(bench))
    picked = json.loads(smneuron_cli(*cfg, "recommend", str(tmp_path / "bench.json"), "--target-rps",
                                     str(run["throughput_rps"] / 2), "--slo-p99-ms", "10000", "--json").stdout)  # fmt: skip
    assert (picked[0]["instances"], picked[0]["hourly_usd"], picked[0]["cost_per_hour"]) == (1, 10.0, 10.0)
    # the SDK (SMNEURON_LOCAL=1) lists the endpoint, and on a session given the same prices costs it the same
    code = ("import smneuron; from smneuron.endpoints.describing import overview; "
            "print([e['name'] for e in smneuron.list_endpoints()]); "
            "print(overview('ep', session=smneuron.Session.from_env(prices={'ml.c6i.large': 10.0}))['hourly_usd'])")  # fmt: skip
    sdk = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert sdk.returncode == 0 and sdk.stdout.split() == ["['ep']", "10.0"], sdk.stderr[-800:]
    # kill -9 of every worker (issue 22 #4): the next request waits for fresh ones instead of failing on the dead
    state = tmp_path / "state"
    workers = model_servers(state, up["pid"])
    assert workers, "the endpoint's workers carry the service's mark"
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    assert json.loads(smneuron_cli("--local", "invoke", "ep", "i loved it").stdout) == [answer[0]]
    assert not set(workers) & set(service_processes(state))
    # the model server's own words reach the embedded CloudWatch Logs (issue 22 #11), the restart included
    logs = until(
        lambda: "restarting it" in (o := smneuron_cli("--local", "logs", "ep", "--lines", "50").stdout) and o,
        "the restart in the endpoint's logs",
    )
    assert "loaded the model" in logs
    # and in `status`, as copies being replaced are (issue 60 #5): it showed only in the logs
    shown = " ".join(smneuron_cli("--local", "status", "ep").stdout.split())
    assert "InService (Model server workers replaced in the last 10 minutes: instance 0: worker" in shown, (
        shown
    )
    assert "died" in shown and "replaced" in shown
    bad = smneuron_cli(
        "--local",
        "invoke",
        "ep",
        "--data",
        str(tmp_path / "d.jsonl"),
        "--content-type",
        "image/png",
        check=False,
    )
    assert bad.returncode == 1 and "answered 415" in bad.stderr and "unsupported_content_type" in bad.stderr

    smneuron_cli("--local", "scale", "ep", "--min", "2", "--max", "3")
    status = json.loads(smneuron_cli("--local", "status", "ep", "--json").stdout)
    assert status["autoscaling"]["targets"][0]["MaxCapacity"] == 3
    sm = boto3.client("sagemaker", **local_kw(up["url"]))
    until(  # a second instance: a second model server starts here (polled with boto3, not a CLI per poll)
        lambda: (
            sm.describe_endpoint(EndpointName="ep")["ProductionVariants"][0].get("CurrentInstanceCount") == 2
        ),
        "a second instance",
        120,
    )
    status = json.loads(smneuron_cli("--local", "status", "ep", "--json").stdout)
    assert status["variants"][0]["CurrentInstanceCount"] == 2
    smneuron_cli("--local", "scale", "ep", "--min", "1", "--max", "1")

    out = smneuron_cli(
        "--local",
        "deploy",
        str(tmp_path / "a"),
        "--instance",
        "ml.c6i.large",
        "--name",
        "ep",
        "--batch-size",
        "4",
    )
    assert "updated: InService" in out.stdout
    env = json.loads(smneuron_cli("--local", "status", "ep", "--json").stdout)["model"]["Environment"]
    assert env["SAGEMAKER_TS_BATCH_SIZE"] == "4"
    assert json.loads(smneuron_cli("--local", "invoke", "ep", "again").stdout)[0][
        "label"
    ]  # the new server answers

    smneuron_cli("--local", "delete", "ep", "--yes")
    assert json.loads(smneuron_cli("--local", "list", "--json").stdout) == []
    smneuron_cli("local", "down")
    nothing_is_left(state)  # the killed workers' replacements included (ps)
    assert smneuron_cli("local", "status", check=False).returncode == 1


def test_a_neuron_artifact_fails_its_health_check_with_the_reason(smneuron_cli, tiny_classifier, tmp_path):
    from smneuron.artifact.packaging import package
    from smneuron.compilation.encoder import compile_model

    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    m = json.loads((tmp_path / "a" / "smneuron.json").read_text())
    m["compiler"]["target"] = "inf2"
    (tmp_path / "a" / "smneuron.json").write_text(json.dumps(m))
    tarball = package(tmp_path / "a", tmp_path / "inf2.tar.gz").path
    smneuron_cli("local", "up")
    out = smneuron_cli(
        "--local", "deploy", str(tarball), "--instance", "ml.inf2.xlarge", "--name", "neuron", check=False
    )
    assert out.returncode == 1
    assert "did not pass the ping health check" in out.stderr and "torch-neuronx" in out.stderr
    assert json.loads(smneuron_cli("--local", "list", "--json").stdout) == []  # the failed deploy cleaned up


def test_plain_boto3_sees_sagemakers_statuses_refusals_and_bytes(smneuron_cli, tiny_classifier, tmp_path):
    """Plain boto3 against the service (issue 22 #5, #9, #2): ListEndpoints said InService for endpoints whose
    DescribeEndpoint said Creating or Failed (and StatusEquals filtered on that); an unknown TargetVariant was
    served; a binary body was an HTML 500."""
    import time

    from smneuron.artifact.packaging import package
    from smneuron.compilation.encoder import compile_model

    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    m = json.loads((tmp_path / "a" / "smneuron.json").read_text())
    m["compiler"]["target"] = "inf2"  # cannot be served here: its health check fails with the reason
    (tmp_path / "b").mkdir()
    for f in (tmp_path / "a").iterdir():
        (tmp_path / "b" / f.name).write_bytes(f.read_bytes())
    (tmp_path / "b" / "smneuron.json").write_text(json.dumps(m))
    inf2 = package(tmp_path / "b", tmp_path / "inf2.tar.gz").path
    up = json.loads(smneuron_cli("local", "up", "--json").stdout)
    smneuron_cli("--local", "deploy", str(tmp_path / "a"), "--instance", "ml.c6i.xlarge", "--name", "good")
    smneuron_cli("--local", "deploy", str(inf2), "--instance", "ml.inf2.xlarge", "--name", "bad", "--no-wait")
    sm = boto3.client("sagemaker", **local_kw(up["url"]))
    deadline = time.monotonic() + 120
    while sm.describe_endpoint(EndpointName="bad")["EndpointStatus"] != "Failed":
        assert time.monotonic() < deadline
        time.sleep(0.5)
    listed = {e["EndpointName"]: e["EndpointStatus"] for e in sm.list_endpoints()["Endpoints"]}
    described = {n: sm.describe_endpoint(EndpointName=n)["EndpointStatus"] for n in ("good", "bad")}
    assert listed == described == {"good": "InService", "bad": "Failed"}
    assert [e["EndpointName"] for e in sm.list_endpoints(StatusEquals="Failed")["Endpoints"]] == ["bad"]
    assert [e["EndpointName"] for e in sm.list_endpoints(StatusEquals="InService")["Endpoints"]] == ["good"]

    # InvokeEndpoint's refusals in SageMaker's words (issue 22 #9): an unknown variant is refused, never served
    runtime = boto3.client("sagemaker-runtime", **local_kw(up["url"]))
    answers = Recorder()  # every InvokeEndpoint answer below is held against botocore's model
    answers.attach(runtime)
    ok = runtime.invoke_endpoint(EndpointName="good", Body=b'"fine"', ContentType="application/json",
                                 TargetVariant="AllTraffic")  # fmt: skip
    assert ok["InvokedProductionVariant"] == "AllTraffic"
    for kwargs, words in (
        (
            {"EndpointName": "good", "TargetVariant": "Nope"},
            "Target variant Nope not found for endpoint good",
        ),
        ({"EndpointName": "gone"}, "Endpoint gone of account 123456789012 not found."),
    ):
        with pytest.raises(sm.exceptions.ClientError) as e:
            runtime.invoke_endpoint(Body=b'"x"', ContentType="application/json", **kwargs)
        assert e.value.response["Error"]["Code"] == "ValidationError" and words in str(e.value)
    # a binary body reaches the container as it is (issue 22 #2: it was decoded as UTF-8 first, an HTML 500)
    with pytest.raises(sm.exceptions.ClientError) as e:
        runtime.invoke_endpoint(
            EndpointName="good", Body=b"\x93NUMPY\x01\x00\xff\xfe", ContentType="application/x-npy"
        )
    assert e.value.response["Error"]["Code"] == "ModelError" and e.value.response["OriginalStatusCode"] == 415
    assert "unsupported_content_type" in e.value.response["OriginalMessage"]  # the container's own answer
    assert answers.problems("sagemaker-runtime") == {
        "InvokeEndpoint": []
    }  # ModelError 424, ValidationError 400
    assert {status for _, status, _ in answers.answers} >= {200, 400, 424}

    # `local down` in the middle of a bench (issue 22 #12, #3): the bench fails, and nothing of the run is left
    (tmp_path / "d.jsonl").write_text('{"inputs": "hello world"}\n{"inputs": "what a great film"}\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMNEURON_"))}
    env.update(
        SMNEURON_STATE_DIR=str(tmp_path / "state"), SMNEURON_CACHE_DIR=os.environ["SMNEURON_CACHE_DIR"]
    )
    env.update(
        SMNEURON_PROGRESS="1"
    )  # the bench says how many requests returned: down comes mid-run, not before
    bench = subprocess.Popen(
        [sys.executable, "-m", "smneuron.cli.main", "--local", "bench", "good", "--data", str(tmp_path / "d.jsonl"),
         "--duration", "60", "--json"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    seen = _read_until(bench.stderr, re.compile(r"\b([1-9]\d*) requests \(0 errors\)"), timeout=120)
    smneuron_cli("local", "down")
    out, err = bench.communicate(timeout=180)
    err = seen + err
    # the service is gone: the bench stops at the first request that cannot reach it, says so, and prints no report
    assert bench.returncode == 1 and out == "", err[-2000:]
    assert "Cannot reach AWS at http://127.0.0.1:" in err and "is the embedded AWS running?" in err
    assert "Traceback" not in err and "Unexpected error" not in err
    nothing_is_left(tmp_path / "state")


def test_the_dlc_stack_can_back_the_endpoints(smneuron_cli, tiny_classifier, tmp_path):
    from smneuron.compilation.encoder import compile_model

    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    up = json.loads(smneuron_cli("local", "up", "--engine", "torchserve", "--json").stdout)
    assert up["engine"] == "torchserve"
    refused = smneuron_cli(
        "--local",
        "deploy",
        str(tmp_path / "a"),
        "--instance",
        "ml.inf2.xlarge",
        "--name",
        "ts-ep",
        check=False,
    )  # a cpu artifact is refused for ml.inf2 before anything runs (issue 51 #5: this was never checked)
    assert refused.returncode == 1 and "compiled for cpu" in " ".join(refused.stderr.split()), refused.stderr
    assert json.loads(smneuron_cli("--local", "list", "--json").stdout) == []  # nothing was created
    smneuron_cli("--local", "deploy", str(tmp_path / "a"), "--instance", "ml.c6i.xlarge", "--name", "ts-ep")
    service = up["pid"]
    java = _torchserve_java(tmp_path / "state")
    assert java  # TorchServe's Java frontend serves this endpoint
    answer = json.loads(smneuron_cli("--local", "invoke", "ts-ep", "i loved it").stdout)
    # the model's own answer through TorchServe: what the shipped inference code answers in this process
    from served import code_on_path

    from smneuron.artifact.packaging import package

    served = package(tmp_path / "a", tmp_path / "direct", compression="none").path
    with code_on_path(served) as mods:
        inf = mods["inference"]
        model = inf.model_fn(str(served))
        direct = inf.predict_fn(
            inf.input_fn(json.dumps({"inputs": ["i loved it"]}), "application/json"), model
        )[0]
    assert answer[0]["label"] == direct[0]["label"] and answer[0]["score"] == pytest.approx(
        direct[0]["score"], abs=1e-5
    )
    smneuron_cli("--local", "delete", "ts-ep", "--yes")
    smneuron_cli("local", "down")
    assert not alive(service) and not any(alive(p) for p in java)


def _read_until(stream, pattern: re.Pattern, timeout: float) -> str:  # type: ignore[no-untyped-def]
    """What ``stream`` said up to the first match of ``pattern`` (progress lines are redrawn with \\r)."""
    seen, deadline = "", time.monotonic() + timeout
    while not pattern.search(seen):
        assert time.monotonic() < deadline, seen[-1000:]
        chunk = stream.read(1)
        assert chunk, seen[-1000:]  # the bench ended before any request returned
        seen += chunk
    return seen


def test_a_port_taken_between_its_choice_and_the_bind_is_refused_by_the_service_and_another_is_picked(
    tmp_path, monkeypatch
):
    """Another program takes the port `local up` picked before the service binds it: moto's server thread exited on
    the bind and the service waited on it forever, so `up` waited out its 120 s and left the service running. The
    service now refuses at once and `up` starts it on another port."""
    import socket

    from smneuron.local import service
    from smneuron.serving.ports import free_port

    monkeypatch.setenv("SMNEURON_STATE_DIR", str(tmp_path / "state"))
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        taken, picked = other.getsockname()[1], []
        # the first port picked is the one the other program holds (what a race gives), the rest are free
        monkeypatch.setattr(
            service, "free_port", lambda: taken if not picked.append(1) and len(picked) == 1 else free_port()
        )
        try:
            up = service.up(timeout=60)
            assert up["url"] != f"http://127.0.0.1:{taken}" and len(picked) == 2
        finally:
            service.down()
    assert "is already in use" in (tmp_path / "state" / "local.log").read_text()
