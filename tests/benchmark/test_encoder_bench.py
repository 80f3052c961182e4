"""bench: schedules (constant is open loop), statistics against known latencies, cost, report."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from conftest import run_cli

from smneuron.benchmark import encoder as bench
from smneuron.benchmark import prompts
from smneuron.benchmark.request import bench as bench_endpoint
from smneuron.errors import BenchFailedError, ConfigError, SmneuronError
from smneuron.serving.ports import free_port


@pytest.fixture(scope="module")
def slow_server():
    """A server that answers every POST /invocations after a fixed delay given in the body."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def invocations(request: Request) -> Response:
        body = json.loads(await request.body())
        await asyncio.sleep(body.get("delay", 0.02))
        return Response(b"[]", status_code=body.get("status", 200), media_type="application/json")

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            Starlette(routes=[Route("/invocations", invocations, methods=["POST"])]),
            host="127.0.0.1",
            port=port,
            log_level="error",
        )
    )
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    while not server.started:
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    t.join(5)


def payload(delay: float, status: int = 200) -> list[bytes]:
    return [json.dumps({"inputs": "x", "delay": delay, "status": status}).encode()]


def test_synchronous_latency_statistics_match_the_server_delay(slow_server):
    r = bench.run(
        url=slow_server,
        payloads=payload(0.05),
        profile="synchronous",
        duration_s=1.2,
        warmup_s=0.1,
        cooldown_s=0.0,
    )
    (run,) = r.runs
    # one request at a time against 50 ms responses: never more than the window holds (1.1 s / 50 ms + the
    # one in flight), never faster than the server; a loaded machine only makes it slower
    assert 1 <= run.requests_ok <= 23
    assert run.latency_ms["p50"] >= 50 and run.latency_ms["mean"] >= 50
    assert (
        run.latency_ms["p50"]
        <= run.latency_ms["p90"]
        <= run.latency_ms["p95"]
        <= run.latency_ms["p99"]
        <= run.latency_ms["max"]
    )
    assert run.throughput_rps == pytest.approx(1000 / run.latency_ms["mean"], rel=0.25)


def test_constant_rate_is_open_loop(slow_server):
    # every response takes 300 ms; at 20 req/s a closed loop would manage ~3 req/s
    r = bench.run(
        url=slow_server,
        payloads=payload(0.3),
        profile="constant",
        rate=20,
        duration_s=1.0,
        warmup_s=0.0,
        cooldown_s=0.0,
    )
    (run,) = r.runs
    assert run.requests_ok == 20
    # open loop: requests leave on schedule. A closed loop would lag 250 ms more with every request
    # (300 ms responses vs 50 ms slots), a median lag of ~2.5 s; the margin holds on a loaded machine
    assert run.send_lag_ms["p50"] < 1000


def test_throughput_and_failures_by_status(slow_server):
    mixed = payload(0.01) + payload(0.01, status=503)
    r = bench.run(
        url=slow_server,
        payloads=mixed,
        profile="throughput",
        concurrency=8,
        duration_s=30,  # a bound only: the run ends at its 100th request (0.13 s unloaded)
        warmup_s=0.0,
        cooldown_s=0.0,
        max_requests=100,
    )
    (run,) = r.runs
    assert run.requests_ok + run.requests_failed == 100
    assert set(run.by_status) == {"200", "503"} and run.by_status["503"] == 50


def test_sweep_runs_sync_throughput_and_rates_between(slow_server):
    r = bench.run(
        url=slow_server,
        payloads=payload(0.02),
        profile="sweep",
        rates=2,
        concurrency=8,
        duration_s=0.5,
        warmup_s=0.0,
        cooldown_s=0.0,
        instance_type="ml.inf2.xlarge",
    )
    kinds = [x.profile for x in r.runs]
    assert kinds == ["synchronous", "throughput", "constant", "constant"]
    lo, hi = r.runs[0].throughput_rps, r.runs[1].throughput_rps
    assert lo < r.runs[2].rate < r.runs[3].rate < hi
    assert r.hourly_usd == 0.99 and all(x.cost_per_million_usd for x in r.runs)
    data = json.loads(r.to_json())
    assert set(data) == {
        "target",
        "instance_type",
        "instance_count",
        "hourly_usd",
        "price_source",  # where hourly_usd comes from: --price, the project's prices, the catalog
        "payloads",
        "runs",
        "generator",
        "cloudwatch",
        "created_at",
        "search",  # --find-max only
        "notes",  # what the numbers cannot be read without (the client's own limit)
        "processes",  # load-generator processes
        "errors",  # what the failed requests got: none here
        "kind",  # what it measured: "encoder" (a text-generation report says so too)
    }
    assert data["kind"] == "encoder" and data["errors"] == {}
    assert (
        data["search"] is None and "aws.amazon.com/sagemaker/pricing" in data["price_source"]
    )  # the catalog
    assert set(data["runs"][0]["latency_ms"]) == {"p50", "p90", "p95", "p99", "max", "mean"}


def test_a_target_that_refuses_every_request_fails_the_bench_with_what_it_answered(slow_server):
    """A server that is up but answers 503 to everything: the bench fails (exit 1), saying what came back."""
    with pytest.raises(BenchFailedError, match="Every request failed") as e:
        bench.run(url=slow_server, payloads=payload(0.01, status=503), profile="synchronous", duration_s=1.0,
                  warmup_s=0.1, cooldown_s=0.0)  # fmt: skip
    assert "HTTP 503" in e.value.message


def test_a_dead_url_or_a_number_out_of_range_is_refused_before_any_load(slow_server):
    with pytest.raises(SmneuronError, match="Cannot reach http://127.0.0.1:9: Connection refused") as refused:
        bench_endpoint(url="http://127.0.0.1:9", texts=["hello"], profile="sweep", duration_s=10)
    # refused before the load, not a run of refused connections reported as a failed bench (how long: dead_url.py)
    assert not isinstance(refused.value, BenchFailedError)
    for given, says in (
        ({"concurrency": 0}, "concurrency= must be a whole number of at least 1, got 0"),
        ({"rate": float("nan"), "profile": "constant"}, "rate= must be a number above 0, got nan"),
        (
            {"concurrencies": [4, -1], "profile": "concurrent"},
            "concurrencies= must be a whole number of at least 1, got -1",
        ),
        ({"goodput_target": 1.5}, "goodput_target= must be a number above 0 and at most 1, got 1.5"),
        ({"spread": -1}, "spread= must be a whole number of at least 0"),
        # a load setting the profile does not read is refused too, named as the SDK's keyword
        (
            {"profile": "throughput", "rates": 5},
            r"The throughput profile does not read rates= \(read by sweep\)",
        ),
        ({"profile": "constant", "rate": 5, "concurrency": 8}, "does not read concurrency="),
    ):
        with pytest.raises(ConfigError, match=says):
            bench_endpoint(url=slow_server, texts=["hello"], duration_s=2, **given)


def test_a_bench_cut_short_by_max_requests_inside_its_warm_up_says_so(slow_server):
    """--max-requests 20 at 10 ms a request ends every run inside the 1 s warm-up: the sweep divided by a rate of 0
    (the user saw 'Unexpected error: ZeroDivisionError'); it is a failed bench that names the flag and the way out."""
    with pytest.raises(BenchFailedError) as e:
        bench.run(url=slow_server, payloads=payload(0.01), profile="sweep", concurrency=4, duration_s=3.0,
                  warmup_s=1.0, cooldown_s=0.0, max_requests=20)  # fmt: skip
    assert "nothing was measured" in e.value.message
    assert "--max-requests 20" in e.value.hint and "--warmup 0" in e.value.hint


def test_a_run_that_measured_nothing_beside_others_is_said_not_shown_as_a_rate_of_zero(slow_server):
    """80 requests of 10 ms: the synchronous run lasts at least 0.8 s (some of it before the 0.5 s cool-down), the
    throughput run at 16 in flight about 0.05 s (all of it inside the cool-down)."""
    r = bench.run(url=slow_server, payloads=payload(0.01), profile="sweep", rates=1, concurrency=16, duration_s=5.0,
                  warmup_s=0.0, cooldown_s=0.5, max_requests=80)  # fmt: skip
    empty = [x.profile for x in r.runs if x.requests_ok + x.requests_failed == 0]
    assert "throughput" in empty and "synchronous" not in empty
    (note,) = [n for n in r.notes if n.startswith("Measured nothing")]
    assert "throughput" in note and "--max-requests 80" in note


def test_cost_arithmetic_and_quantiles():
    assert bench.cost_per_million(100, 0.99, 2) == pytest.approx(1e6 / 100 * 0.99 / 3600 * 2)
    assert bench.cost_per_million(0, 0.99) is None
    q = bench.percentiles([i / 1000 for i in range(1, 101)])  # 1..100 ms
    assert q["p50"] == pytest.approx(50.5) and q["p99"] == pytest.approx(99.01) and q["max"] == 100


def test_generated_payloads_follow_the_token_length(tiny_classifier):
    from tokenizers import Tokenizer

    bodies = prompts.load_payloads(
        tokenizer=tiny_classifier / "tokenizer.json", count=50, mean_tokens=20, spread=0
    )
    tok = Tokenizer.from_file(str(tiny_classifier / "tokenizer.json"))
    lengths = [len(tok.encode(json.loads(b)["inputs"]).ids) for b in bodies]
    assert all(20 <= n <= 22 for n in lengths)


def test_generated_texts_reach_their_length_with_a_padding_tokenizer_given_as_a_directory(minilm_dir):
    """all-MiniLM-L6-v2's tokenizer.json pads to 128 and truncates: counted with it as saved, every text came out
    one word long (128 >= any target). `--tokenizer` takes the model or artifact directory too."""
    bodies = prompts.load_payloads(tokenizer=minilm_dir, count=30, mean_tokens=24, spread=0)
    tok = prompts.load_tokenizer(minilm_dir)  # padding and truncation off: the text's own tokens
    lengths = [len(tok.encode(json.loads(b)["inputs"]).ids) for b in bodies]
    assert all(24 <= n <= 26 for n in lengths), lengths  # [CLS] and [SEP] included
    assert min(len(json.loads(b)["inputs"].split()) for b in bodies) > 5


def test_jsonl_data_file(tmp_path):
    f = tmp_path / "d.jsonl"
    f.write_text('"hello"\n{"inputs": ["a", "b"], "parameters": {"top_k": 2}}\n\n')
    bodies = [json.loads(b) for b in prompts.load_payloads(f)]
    assert bodies == [{"inputs": "hello"}, {"inputs": ["a", "b"], "parameters": {"top_k": 2}}]


@pytest.mark.e2e  # the embedded SageMaker (`local up`) and a model server
def test_an_endpoint_target_sends_signed_invocations_the_model_answers(
    smneuron_cli, tiny_classifier, tmp_path
):
    """bench against a SageMaker endpoint: a missing one is refused before any load; each request is InvokeEndpoint
    signed as botocore signs it (the embedded SageMaker checks the SigV4 signature) and answered by the model; a body
    the model refuses is its own status and words, at the first request."""
    from conftest import local_kw

    from smneuron.compilation.encoder import compile_model
    from smneuron.errors import NotFoundError
    from smneuron.session import Session

    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    url = json.loads(smneuron_cli("local", "up", "--json").stdout)["url"]
    smneuron_cli("--local", "deploy", str(tmp_path / "a"), "--instance", "ml.c6i.large", "--name", "ep")
    kw = local_kw(url)
    import boto3

    session = Session(boto3.Session(aws_access_key_id=kw["aws_access_key_id"], region_name=kw["region_name"],
                                    aws_secret_access_key=kw["aws_secret_access_key"]),
                      region=kw["region_name"], endpoint_url=url)  # fmt: skip
    run = dict(profile="throughput", concurrency=4, duration_s=20, max_requests=20, warmup_s=0, cooldown_s=0)
    with pytest.raises(NotFoundError, match="'missing' does not exist"):  # never a benchmark of nothing
        bench.run(endpoint="missing", session=session, payloads=[b'{"inputs": "hello"}'], **run)
    r = bench.run(endpoint="ep", session=session, payloads=[b'{"inputs": "hello world"}'], **run)
    assert r.runs[0].requests_ok == 20 and r.runs[0].requests_failed == 0 and r.target == "sagemaker:ep"
    # the container's 4xx, as InvokeEndpoint's ModelError carries it, said at the first request
    with pytest.raises(ConfigError) as refused:
        bench.run(endpoint="ep", session=session, payloads=[b'{"texts": "no inputs key"}'], **run)
    said = str(refused.value)
    assert "The model refused the first request before any load was sent (HTTP 400: " in said
    assert "Each input must be a string or a [text, text_pair] pair of strings" in said


@pytest.mark.e2e
def test_plot_compare_and_recommend(slow_server, tmp_path):
    from conftest import run_cli

    a = bench.run(
        url=slow_server,
        payloads=payload(0.02),
        profile="sweep",
        rates=1,
        concurrency=8,
        duration_s=0.5,
        warmup_s=0,
        cooldown_s=0,
        instance_type="ml.inf2.xlarge",
    )
    b = bench.run(
        url=slow_server,
        payloads=payload(0.04),
        profile="sweep",
        rates=1,
        concurrency=8,
        duration_s=0.5,
        warmup_s=0,
        cooldown_s=0,
        instance_type="ml.inf1.xlarge",
    )
    png = a.plot(tmp_path / "a.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    (tmp_path / "a.json").write_text(a.to_json())
    (tmp_path / "b.json").write_text(b.to_json())
    code, out, err = run_cli("bench", "compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json")
    assert code == 0, err
    rows = json.loads(out)["runs"]
    assert [r["profile"] for r in rows] == ["synchronous", "throughput", "constant"]
    pa, pb = a.runs[0].latency_ms["p50"], b.runs[0].latency_ms["p50"]
    assert rows[0]["p50_ms"] == [pytest.approx(pa), pytest.approx(pb), pytest.approx(pb / pa)]  # B / A
    assert pa >= 20 and pb >= 40  # what the servers' delays make certain, whatever the load adds
    code, out, err = run_cli(
        "recommend",
        str(tmp_path / "a.json"),
        str(tmp_path / "b.json"),
        "--slo-p99-ms",
        "1000",
        "--target-rps",
        "2000",
        "--json",
    )
    assert code == 0, err
    options = json.loads(out)
    for o in options:
        assert o["instances"] == -(-2000 // o["sustainable_rps_per_instance"])
        assert o["cost_per_hour"] == pytest.approx(o["instances"] * o["hourly_usd"])
    assert options == sorted(options, key=lambda o: o["cost_per_hour"])
    code, _, err = run_cli("recommend", str(tmp_path / "a.json"), "--slo-p99-ms", "1", "--target-rps", "10")
    assert code == 1 and "No report" in err


def _moto_endpoint(session, role, name: str) -> None:
    sm = session.client("sagemaker")
    sm.create_model(ModelName=name, ExecutionRoleArn=role, PrimaryContainer={"Image": "x"})
    sm.create_endpoint_config(
        EndpointConfigName=name,
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": name,
                "InitialInstanceCount": 1,
                "InstanceType": "ml.c6i.xlarge",
            }
        ],
    )
    sm.create_endpoint(EndpointName=name, EndpointConfigName=name)


def test_cloudwatch_model_and_overhead_latency_for_endpoints(session, role):
    """The run's SageMaker-side latency: ModelLatency and OverheadLatency (microseconds) read back in ms."""
    import datetime as dt

    from smneuron.benchmark.targets import endpoint_latency_metrics

    _moto_endpoint(session, role, "ep-cw")
    cw = session.client("cloudwatch")
    dims = [{"Name": "EndpointName", "Value": "ep-cw"}, {"Name": "VariantName", "Value": "AllTraffic"}]
    now = dt.datetime.now(dt.timezone.utc)
    for name, micros in (("ModelLatency", 12000.0), ("OverheadLatency", 3000.0)):
        cw.put_metric_data(
            Namespace="AWS/SageMaker",
            MetricData=[
                {
                    "MetricName": name,
                    "Dimensions": dims,
                    "Timestamp": now,
                    "Value": micros,
                    "Unit": "Microseconds",
                }
            ],
        )
    got = endpoint_latency_metrics(session, "ep-cw", now, now)
    assert got["ModelLatency"]["average_ms"] == pytest.approx(12.0)
    assert got["OverheadLatency"]["max_ms"] == pytest.approx(3.0)


def test_a_run_with_too_many_failed_requests_fails_after_writing_its_report(slow_server, tmp_path):
    """Half the requests answer 503: the report is written and shown, and the command exits 1 (issue 22 #12)."""
    from conftest import run_cli

    data = tmp_path / "half-fail.jsonl"
    data.write_text(
        "".join(json.dumps({"inputs": "x", "delay": 0.01, "status": s}) + "\n" for s in (200, 503))
    )
    args = ["bench", "--url", slow_server, "--data", str(data), "--rate-type", "throughput"]
    args += [
        "--concurrency",
        "2",
        "--duration",
        "1",
        "--warmup",
        "0",
        "--cooldown",
        "0",
        "--max-requests",
        "20",
    ]
    code, out, err = run_cli(*args, "-o", str(tmp_path / "r.json"))
    assert code == 1 and "10 of 20 requests" in err and "(50.0%), above --max-error-rate 0.01" in err
    written = json.loads((tmp_path / "r.json").read_text())
    assert written["runs"][0]["requests_failed"] == 10
    assert "throughput" in out  # the table was shown before the verdict
    # and what the failed requests got, which the verdict's hint points to (it pointed to nothing)
    (what,) = written["errors"]
    assert "503" in what and written["errors"][what] == 10, written["errors"]
    assert f"errors: {what} (x10)" in " ".join(out.split()), out
    code, out, err = run_cli(*args, "--max-error-rate", "0.5")
    assert code == 0, err


def test_a_bench_whose_own_process_is_the_limit_says_so(slow_server, monkeypatch):
    """The load generator's CPU is read around each run: an idle client (one request per 50 ms) says nothing; a client
    that used a whole core (its CPU clock driven here to run as fast as the wall clock) is told its rate may be its
    own, with the way past it."""
    quiet = bench.run(
        url=slow_server,
        payloads=payload(0.05),
        profile="synchronous",
        duration_s=0.6,
        warmup_s=0.1,
        cooldown_s=0.0,
    )
    (run,) = quiet.runs
    assert run.client_cores is not None and 0 <= run.client_cores < bench.CLIENT_BUSY
    assert quiet.notes == [] and "client_cores" in quiet.to_json()

    monkeypatch.setattr(
        bench, "cpu_seconds", time.perf_counter
    )  # every wall second a CPU second: one full core
    busy = bench.run(
        url=slow_server,
        payloads=payload(0.01),
        profile="concurrent",
        concurrencies=[4],
        duration_s=0.6,
        warmup_s=0.1,
        cooldown_s=0.0,
    )
    (run,) = busy.runs
    assert run.client_cores == pytest.approx(1.0, abs=0.02)
    (note,) = busy.notes
    assert "used 1.00 of a CPU core during the concurrent run at concurrency 4" in note
    assert "may be this client's limit, not the endpoint's" in note and "--processes 2" in note
    assert json.loads(busy.to_json())["notes"] == [note]
    assert ("note", note) in busy._card().rows  # the notebook's card shows it too


def test_a_bench_from_three_processes_measures_the_whole_load_and_leaves_no_process(slow_server):
    """--processes 3: each run's load is spread over this process and two helpers started for the bench; the run's
    numbers are the whole load's (6 in flight against 50 ms answers is ~120 req/s; this process's 2 alone would be
    ~40), an open loop's rate is the whole rate, and the helpers are gone when the bench returns."""
    import multiprocessing

    r = bench.run(
        url=slow_server,
        payloads=payload(0.05),
        profile="concurrent",
        concurrencies=[6],
        duration_s=1.5,
        warmup_s=0.3,
        cooldown_s=0.0,
        processes=3,
    )
    (run,) = r.runs
    assert r.processes == 3 and json.loads(r.to_json())["processes"] == 3
    assert run.concurrency == 6 and run.requests_failed == 0
    # Little's law over the merged samples: 6 in flight / the mean latency (a loaded machine slows both alike)
    assert run.throughput_rps == pytest.approx(6 * 1000 / run.latency_ms["mean"], rel=0.3)
    assert run.throughput_rps > 2 * 1000 / run.latency_ms["mean"] * 1.5  # more than this process's share
    opened = bench.run(
        url=slow_server,
        payloads=payload(0.01),
        profile="constant",
        rate=60,
        duration_s=1.5,
        warmup_s=0.0,
        cooldown_s=0.0,
        processes=3,
    )
    (run,) = opened.runs
    assert run.rate == 60 and 60 * 1.5 * 0.8 <= run.requests_ok <= 60 * 1.5 + 3  # the whole rate, not a third
    assert multiprocessing.active_children() == []


def test_processes_is_a_whole_number_from_one(slow_server):
    from smneuron.errors import ConfigError

    for bad in (0, -2, 1.5, True):
        with pytest.raises(ConfigError, match="load-generator processes"):
            bench.run(
                url=slow_server, payloads=payload(0.01), profile="synchronous", duration_s=2, processes=bad
            )


def test_a_concurrent_run_keeps_every_request_it_was_asked_for_in_flight(slow_server):
    """--concurrencies 40 with --concurrency left at 16: the run keeps 40 in flight (it kept 24, its connection pool's
    size, and reported 40), so 200 ms answers come back at ~200 req/s; the report says how many were in flight.
    Little's law counts the requests answered inside the window: the ones still open at its end (one latency's worth)
    are missing, so the window is ten latencies long (2.5 s), which leaves the 0.8 a margin when a loaded machine
    answers in 300 ms rather than 200."""
    r = bench.run(
        url=slow_server,
        payloads=payload(0.2),
        profile="concurrent",
        concurrencies=[40],
        duration_s=3.0,
        warmup_s=0.5,
        cooldown_s=0.0,
    )
    (run,) = r.runs
    assert run.concurrency == 40 and run.requests_failed == 0
    assert run.in_flight is not None and run.in_flight >= 0.8 * 40
    assert run.throughput_rps == pytest.approx(run.in_flight * 1000 / run.latency_ms["mean"], rel=0.2)
    assert not any("in flight on average" in n for n in r.notes)


def test_a_run_that_kept_fewer_in_flight_than_asked_says_it_was_this_clients_doing():
    def stats(concurrency, in_flight, rate=None):
        return bench.RunStats(
            profile="concurrent" if rate is None else "constant", rate=rate, concurrency=concurrency, requests_ok=100,
            requests_failed=0, by_status={"200": 100}, duration_s=1.0, throughput_rps=1000.0,
            latency_ms={"mean": 24.0}, send_lag_ms={}, in_flight=in_flight,
        )  # fmt: skip

    (note,) = bench.client_notes([stats(8, 7.9), stats(64, 24.0), stats(None, 3.0, rate=100.0)])
    assert note.startswith("The concurrent run at concurrency 64 kept 24.0 requests in flight on average")
    assert "not 64" in note and "(1 of 3 run(s) short)" in note and "--processes 2" in note
    assert (
        bench.client_notes([stats(64, 60.0), stats(None, 0.5, rate=100.0)]) == []
    )  # open loops keep what arrives


def test_a_helper_killed_mid_run_fails_the_bench_with_the_reason(slow_server):
    """kill -9 of a load-generator helper (an OOM kill): the run's load was not whole, so the bench fails saying so
    rather than report the survivors' share as the run."""
    import multiprocessing
    import os
    import signal

    from smneuron.errors import BenchFailedError

    port = int(slow_server.rsplit(":", 1)[1])

    def connected(pid: int) -> bool:
        """Whether process ``pid`` holds a TCP connection to the server: its share of the load is being sent."""
        inodes = set()
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
        with open("/proc/net/tcp") as f:
            rows = [line.split() for line in f.readlines()[1:]]
        return any(int(r[2].split(":")[1], 16) == port and r[9] in inodes for r in rows)

    def kill_a_helper() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            helpers = [p for p in multiprocessing.active_children() if p.name.startswith("smneuron-bench-")]
            try:
                if helpers and connected(helpers[0].pid):  # inside the run, known rather than slept for
                    os.kill(helpers[0].pid, signal.SIGKILL)
                    return
            except FileNotFoundError:
                pass
            time.sleep(0.01)

    killer = threading.Thread(target=kill_a_helper, daemon=True)
    killer.start()
    with pytest.raises(BenchFailedError, match="helper process exited during the run"):
        bench.run(
            url=slow_server, payloads=payload(0.02), profile="concurrent", concurrencies=[4], duration_s=2.5,
            warmup_s=0.1, cooldown_s=0.0, processes=2,
        )  # fmt: skip
    killer.join(5)
    assert multiprocessing.active_children() == []


def test_a_body_the_model_refuses_is_said_before_any_load(slow_server, tmp_path):
    """Issue 63 #5: `bench --data` of lines the model refuses sent a whole run of requests that all got the same 400;
    now the first request is sent alone and its refusal is the answer, before any load. A multi-run profile says how
    long it will take before it starts."""
    started = time.monotonic()
    with pytest.raises(ConfigError, match="refused the first request before any load was sent") as e:
        bench.run(url=slow_server, payloads=payload(0.01, status=400), profile="sweep", duration_s=2.0)
    assert time.monotonic() - started < 2.0  # not a run, let alone a sweep of five
    assert "HTTP 400" in e.value.message and '{"inputs": "..."}' in e.value.hint
    (tmp_path / "d.jsonl").write_text(json.dumps({"inputs": "x", "delay": 0.01}) + "\n")
    code, out, err = run_cli("bench", "--url", slow_server, "--data", str(tmp_path / "d.jsonl"), "--rate-type",
                             "concurrent", "--concurrencies", "1,2", "--duration", "0.3", "--warmup", "0",
                             "--cooldown", "0")  # fmt: skip
    assert code == 0, err
    assert "note: concurrent: 2 runs of 0.3 s (concurrency 1, 2), about 1 s" in " ".join(out.split())


def test_a_bench_with_nothing_to_send_is_refused_alone_and_a_notebook_hears_how_long(slow_server, tmp_path):
    """The note on how long a sweep takes came before the refusal of a bench that had nothing to send; it is now said
    once the requests are made, by the SDK (so a notebook hears it too, through ``on_start``)."""
    code, out, err = run_cli("bench", "--url", slow_server, "--duration", "3")
    assert code == 1 and "nothing to send" in err, (out, err)
    assert "note:" not in out + err and "Unexpected error" not in err
    heard: list[str] = []
    (tmp_path / "d.jsonl").write_text(json.dumps({"inputs": "x", "delay": 0.01}) + "\n")
    report = bench_endpoint(
        url=slow_server, data=tmp_path / "d.jsonl", profile="concurrent", concurrencies=[1, 2], duration_s=0.3,
        warmup_s=0, cooldown_s=0, on_start=heard.append,
    )  # fmt: skip
    assert heard == ["concurrent: 2 runs of 0.3 s (concurrency 1, 2), about 1 s; --rate-type throughput (or "
                     "synchronous) measures one run"]  # fmt: skip
    assert [r.concurrency for r in report.runs] == [1, 2]
