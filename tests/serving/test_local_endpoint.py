"""The local endpoint: ping gating, correct concurrent answers, real batching, every worker used,
bad requests, a worker killed mid-load, SIGTERM drain, and refusal of artifacts it cannot run."""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from served import code_on_path

from smneuron.artifact.packaging import package
from smneuron.compilation.encoder import compile_model
from smneuron.errors import ArtifactError
from smneuron.serving.server import LocalEndpoint, host_cpus
from smneuron.specs.models import EndpointSpec

pytestmark = pytest.mark.e2e  # servers, subprocesses or the embedded service: not in the fast loop

TEXTS = [
    "the movie was great",
    "what a terrible book",
    "i loved it",
    "this film was not good",
    "paris",
    "John works at Google in London .",
    "they hated the story",
    "a fine city",
]


@pytest.fixture(scope="module")
def tarball(tiny_classifier, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("local")
    compile_model(
        tiny_classifier, d / "a", target="cpu", task="text-classification", batch_size=4, buckets="16,32"
    )
    return package(d / "a", d / "model.tar.gz").path


@pytest.fixture(scope="module", params=["asyncio", "uvloop"])
def endpoint(tarball, request):
    """Served under both event loops users get: uvicorn takes uvloop by itself wherever it is installed."""
    with LocalEndpoint(
        tarball, instance_type="ml.inf2.xlarge", batch_size=4, max_batch_delay_ms=25, loop=request.param
    ) as ep:
        assert type(ep.pool.loop).__module__.split(".")[0] == request.param
        yield ep


def metric(ep: LocalEndpoint, name: str) -> dict[str, int]:
    text = httpx.get(ep.url + "/metrics").text
    return {m.group(1): int(m.group(2)) for m in re.finditer(name + r'\{worker="(\d+)"\} (\d+)', text)}


def metric_value(url: str, name: str) -> int:
    """A gauge of the server's /metrics (one without labels)."""
    found = re.search(rf"^{name} (\d+)$", httpx.get(url + "/metrics").text, re.M)
    return int(found.group(1)) if found else -1


def direct_predictions(model_dir: Path, texts: list[str]) -> list[dict]:
    with code_on_path(model_dir) as mods:
        inf = mods["inference"]
        model = inf.model_fn(str(model_dir))
        return inf.predict_fn(inf.input_fn(json.dumps({"inputs": texts}), "application/json"), model)[0]


def test_layout_follows_the_instance_and_this_machine(endpoint):
    assert endpoint.layout.workers == min(2, len(host_cpus()))  # ml.inf2.xlarge has 2 NeuronCores
    assert endpoint.layout.env["SAGEMAKER_TS_BATCH_SIZE"] == "4"
    assert len(set(endpoint.pool.pids())) == endpoint.layout.workers


def test_concurrent_requests_are_answered_correctly_batched_and_spread(endpoint):
    want = direct_predictions(endpoint.model_dir, TEXTS)
    before_passes = sum(metric(endpoint, "smneuron_worker_forward_passes_total").values())
    before_reqs = metric(endpoint, "smneuron_worker_requests_total")
    with httpx.Client(timeout=30) as client, cf.ThreadPoolExecutor(16) as ex:

        def one(i: int):
            r = client.post(endpoint.url + "/invocations", json={"inputs": TEXTS[i % len(TEXTS)]})
            return i, r.status_code, r.json()

        results = list(ex.map(one, range(160)))
    for i, status, body in results:
        assert status == 200
        assert body[0]["label"] == want[i % len(TEXTS)]["label"]
        assert abs(body[0]["score"] - want[i % len(TEXTS)]["score"]) < 1e-5
    passes = sum(metric(endpoint, "smneuron_worker_forward_passes_total").values()) - before_passes
    assert passes < 160 * 0.6, f"{passes} forward passes for 160 requests: batches did not form"
    after = metric(endpoint, "smneuron_worker_requests_total")
    assert all(after[w] > before_reqs.get(w, 0) for w in after), after  # every worker served


def test_bad_requests_get_4xx_and_the_server_stays_healthy(endpoint):
    # counted from here: the module's endpoint may already have restarted a worker another test killed
    restarts = sum(metric(endpoint, "smneuron_worker_restarts_total").values())
    with httpx.Client(timeout=30) as c:
        assert (
            c.post(
                endpoint.url + "/invocations", content=b"{nope", headers={"content-type": "application/json"}
            ).status_code
            == 400
        )
        r = c.post(endpoint.url + "/invocations", content=b"x", headers={"content-type": "image/png"})
        assert r.status_code == 415 and r.json()["code"] == "unsupported_content_type"
        r = c.post(
            endpoint.url + "/invocations",
            content=b"a" * (6 * 1024 * 1024 + 1),
            headers={"content-type": "text/plain"},
        )
        assert r.status_code == 413
        r = c.post(endpoint.url + "/invocations", json={"inputs": "x"}, headers={"accept": "text/html"})
        assert r.status_code == 406
        nested = b"[" * 20000 + b"]" * 20000  # a client's mistake, not a model fault
        r = c.post(
            endpoint.url + "/invocations", content=nested, headers={"content-type": "application/json"}
        )
        assert r.status_code == 400 and "nested too deeply" in r.json()["error"]
        assert c.get(endpoint.url + "/ping").status_code == 200
        assert (
            c.post(
                endpoint.url + "/invocations", content="i loved it", headers={"content-type": "text/plain"}
            ).status_code
            == 200
        )
    assert (
        sum(metric(endpoint, "smneuron_worker_restarts_total").values()) == restarts
    )  # no bad request killed one


def test_the_invocations_route_answers_as_a_web_framework_would(endpoint):
    """/invocations is served without Starlette's routing (the front end's hot path): the HTTP around it stays what
    Starlette answered: 405 for another method, 413 for a streamed body past 6 MiB, the answer's type and length."""
    with httpx.Client(timeout=30) as c:
        assert c.get(endpoint.url + "/invocations").status_code == 405
        assert c.get(endpoint.url + "/nope").status_code == 404

        def chunks():  # no Content-Length: the limit is found while reading
            for _ in range(7):
                yield b"a" * (1024 * 1024)

        r = c.post(endpoint.url + "/invocations", content=chunks(), headers={"content-type": "text/plain"})
        assert r.status_code == 413 and r.json()["code"] == "payload_too_large"
        r = c.post(
            endpoint.url + "/invocations", json={"inputs": "x"}, headers={"accept": "application/jsonlines"}
        )
        assert r.status_code == 200 and r.headers["content-type"] == "application/jsonlines"
        assert int(r.headers["content-length"]) == len(r.content) > 0
        r = c.post(
            endpoint.url + "/v1/embeddings", json={"input": "x"}
        )  # routed to the model (a classifier here)
        assert r.status_code == 400 and "embedding" in r.json()["error"].lower()


def test_what_a_web_page_could_send_is_refused_and_every_client_is_answered(endpoint):
    """`smneuron serve` answers without a key, as the container does: a page the user had open could POST to it
    (text/plain needs no preflight) and, through a DNS-rebinding name, read the answers. An Origin, or a Host that does
    not name the server, now gets 403 before the model sees anything; the CLI, the SDK and curl send neither."""
    port = endpoint.url.rsplit(":", 1)[1]
    with httpx.Client(timeout=30) as c:
        r = c.post(endpoint.url + "/invocations", content=b"hello", headers={"origin": "https://news.example",
                                                                         "content-type": "text/plain"})  # fmt: skip
        assert r.status_code == 403 and "web pages are refused" in r.json()["error"]
        r = c.post(
            endpoint.url + "/invocations", json={"inputs": "x"}, headers={"host": f"rebound.example:{port}"}
        )
        assert r.status_code == 403 and "is not this model server" in r.json()["error"]
        assert c.get(endpoint.url + "/ping", headers={"host": f"rebound.example:{port}"}).status_code == 403
        for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
            r = c.post(endpoint.url + "/invocations", json={"inputs": "x"}, headers={"host": host})
            assert r.status_code == 200, (host, r.text)


def test_a_worker_killed_mid_load_loses_no_request_silently_and_comes_back(endpoint):
    victim = endpoint.pool.pids()[0]
    restarts = metric(endpoint, "smneuron_worker_restarts_total")
    with httpx.Client(timeout=60) as client, cf.ThreadPoolExecutor(12) as ex:
        futures = [
            ex.submit(client.post, endpoint.url + "/invocations", json={"inputs": TEXTS[i % 8]})
            for i in range(120)
        ]
        time.sleep(0.05)
        os.kill(victim, signal.SIGKILL)
        statuses = [f.result().status_code for f in futures]  # each returns: none hangs
    assert set(statuses) <= {200, 500, 503}
    assert statuses.count(200) >= 60
    deadline = time.monotonic() + 60
    while httpx.get(endpoint.url + "/ping").status_code != 200:
        assert time.monotonic() < deadline, "the worker did not come back"
        time.sleep(0.2)
    assert victim not in endpoint.pool.pids()
    assert sum(metric(endpoint, "smneuron_worker_restarts_total").values()) == sum(restarts.values()) + 1
    r = httpx.post(endpoint.url + "/invocations", json={"inputs": TEXTS})
    assert r.status_code == 200 and len(r.json()) == len(TEXTS)


def test_sigterm_drains_in_flight_requests(tarball, tmp_path):
    from smneuron.serving.ports import free_port

    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "smneuron.cli.main",
            "serve",
            str(tarball),
            "--port",
            str(port),
            "--instance",
            "ml.c6i.xlarge",
            "--workers",
            "1",
            "--batch-size",
            "4",
            "--max-batch-delay-ms",
            "3000",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/ping").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read().decode()
            time.sleep(0.2)
        with httpx.Client(timeout=30) as client, cf.ThreadPoolExecutor(3) as ex:
            futures = [
                ex.submit(client.post, url + "/invocations", json={"inputs": [t] * 20}) for t in TEXTS[:3]
            ]
            # three requests, fewer than a batch: they wait in the queue for the batch delay (3 s). SIGTERM goes once
            # the server says all three are there (its queue gauge), not after a sleep that may come too soon
            deadline = time.monotonic() + 30
            while metric_value(url, "smneuron_queue_depth") != 3:
                assert time.monotonic() < deadline and not any(f.done() for f in futures)
                time.sleep(0.02)
            proc.send_signal(signal.SIGTERM)
            statuses = [f.result().status_code for f in futures]
        assert statuses == [200] * 3
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    out = proc.stdout.read().decode()
    assert "1 worker(s) for ml.c6i.xlarge" in out


def test_neuron_artifacts_are_refused_with_a_reason(tiny_classifier, tmp_path, monkeypatch):
    import shutil

    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    art = tmp_path / "b"
    shutil.copytree(tmp_path / "a", art)
    m = json.loads((art / "smneuron.json").read_text())
    m["compiler"]["target"] = "inf2"
    (art / "smneuron.json").write_text(json.dumps(m))
    pkg = package(art, tmp_path / "inf2.tar.gz").path
    with pytest.raises(ArtifactError, match="torch-neuronx.*--target cpu"):
        LocalEndpoint(pkg, port=0).prepare()


def test_workers_are_capped_by_this_machine_and_said_out_loud(tarball):
    from smneuron.local.foreground import describe_layout

    ep = LocalEndpoint(tarball, instance_type="ml.inf2.24xlarge", port=0)
    try:
        layout = ep.prepare()
        assert (
            layout.workers == min(12, len(host_cpus()))
            and layout.env["SAGEMAKER_MODEL_SERVER_WORKERS"] == "12"
        )
        assert ("instance would run 12, capped" in describe_layout(layout)) is (len(host_cpus()) < 12)
    finally:
        ep.cleanup()


@pytest.mark.parametrize(("cores", "workers", "capped"), [(4, 4, True), (16, 12, False)])
def test_the_cap_is_said_on_a_small_machine_and_absent_on_a_big_one(monkeypatch, cores, workers, capped):
    """Issue 51 #5: the capped branch ran only on machines of fewer than 12 CPUs; both are held here, whatever this
    machine has (its core count is the test's)."""
    from smneuron.catalog import InstanceType
    from smneuron.local.foreground import describe_layout
    from smneuron.serving.server import plan_layout
    from smneuron.specs.models import EndpointSpec

    monkeypatch.setattr("smneuron.serving.server.host_cpus", lambda: list(range(cores)))
    manifest = {"compiler": {"target": "inf2", "cores_per_model": 1}, "batch_size": 8}
    layout = plan_layout(manifest, InstanceType.parse("ml.inf2.24xlarge"), EndpointSpec(), None)
    assert layout.workers == workers and layout.env["SAGEMAKER_MODEL_SERVER_WORKERS"] == "12"
    assert ("instance would run 12, capped" in describe_layout(layout)) is capped
    assert layout.env["OMP_NUM_THREADS"] == str(cores // workers)


@pytest.mark.integration
def test_a_request_past_the_model_server_timeout_gets_504_and_the_worker_recovers(minilm_dir, tmp_path):
    compile_model(
        minilm_dir, tmp_path / "a", target="cpu", task="feature-extraction", batch_size=8, buckets="128"
    )
    pkg = package(tmp_path / "a", tmp_path / "m.tar.gz").path
    long_text = " ".join(["inference on neuron cores is fast"] * 20)  # ~128 tokens
    # margins that hold on a loaded 2-core machine: the slow request is ~20 s of CPU work against a 4 s
    # timeout, and the short follow-up has the same 4 s (it once failed at 1 s while a second suite ran)
    spec = EndpointSpec(instance_type="ml.c6i.xlarge", environment={"SMNEURON_MAX_INPUTS": "4096"})
    with LocalEndpoint(
        pkg, instance_type="ml.c6i.xlarge", workers=1, model_server_timeout_s=4, spec=spec
    ) as ep:
        with httpx.Client(timeout=120) as c:
            slow = c.post(ep.url + "/invocations", json={"inputs": [long_text] * 4096})
            assert slow.status_code == 504 and slow.json()["code"] == "model_timeout"
            deadline = time.monotonic() + 60
            while c.get(ep.url + "/ping").status_code != 200:
                assert time.monotonic() < deadline
                time.sleep(0.2)
            assert c.post(ep.url + "/invocations", json={"inputs": "short"}).status_code == 200
        # `smneuron invoke` printed an embedding one float per line (768 lines for two texts): one line each now
        out = subprocess.run([sys.executable, "-m", "smneuron.cli.main", "invoke", "--url", ep.url, "a", "b"],
                             capture_output=True, text=True, timeout=120)  # fmt: skip
        lines = out.stdout.splitlines()
        assert out.returncode == 0 and len(lines) == 4, out.stdout[:500]
        assert [len(v) for v in json.loads(out.stdout)] == [384, 384]


def test_a_compiled_artifact_directory_is_served_as_its_package_would_be(tarball):
    """`smneuron serve out/` with the directory `compile -o out/` wrote (no code/ in it): it said "No module named
    'smneuron_handler'"; it is laid out as its package and answers as the tarball does."""
    artifact = tarball.parent / "a"
    with LocalEndpoint(artifact, instance_type="ml.c6i.xlarge", port=0) as ep:
        got = httpx.post(ep.url + "/invocations", json={"inputs": TEXTS[:2]}, timeout=60)
    assert got.status_code == 200 and len(got.json()) == 2 and "label" in got.json()[0]
    assert not (artifact / "code").exists()  # the user's artifact is left as it was


def test_a_batch_one_artifact_gets_batches_of_one_so_concurrent_requests_spread_over_the_workers(
    tiny_classifier, tmp_path
):
    """With TorchServe's batch of 8 over a batch-1 artifact, 4 requests in flight landed in one worker's batch (four
    passes in a row) while the other worker idled. The batch follows the compiled size unless one is given."""
    compile_model(tiny_classifier, tmp_path / "b1", target="cpu", task="text-classification", buckets="16")
    with LocalEndpoint(tmp_path / "b1", instance_type="ml.c6i.xlarge", port=0) as ep:
        assert ep.layout.env["SAGEMAKER_TS_BATCH_SIZE"] == "1" and ep.batch_size == 1
        before = metric(ep, "smneuron_worker_requests_total"), metric(ep, "smneuron_worker_batches_total")
        with httpx.Client(timeout=60) as client, cf.ThreadPoolExecutor(4) as ex:
            codes = list(
                ex.map(
                    lambda i: client.post(ep.url + "/invocations", json={"inputs": TEXTS[i % 8]}).status_code,
                    range(80),
                )
            )
        assert codes == [200] * 80
        served = {w: n - before[0].get(w, 0) for w, n in metric(ep, "smneuron_worker_requests_total").items()}
        batches = {w: n - before[1].get(w, 0) for w, n in metric(ep, "smneuron_worker_batches_total").items()}
        assert sum(served.values()) == 80 and served == batches  # one request per batch
        # every worker of the layout took requests (two where the host has two CPUs for it, one on a 1-CPU host)
        assert len(served) == ep.layout.workers and min(served.values()) > 0, (served, ep.layout.workers)
    with LocalEndpoint(tmp_path / "b1", instance_type="ml.c6i.xlarge", port=0, batch_size=4) as ep:
        assert ep.layout.env["SAGEMAKER_TS_BATCH_SIZE"] == "4"  # given by hand: kept


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_port_chosen_for_the_endpoint_is_held_while_its_workers_load(tarball, loop):
    """Port 0 (the embedded SageMaker's instances, the SDK): the port was chosen by number, then the workers loaded for
    seconds, then uvicorn bound it; a process that took it meanwhile failed the start ("could not listen"). The port
    is now held from the moment it is chosen, and served on."""
    import socket

    ep = LocalEndpoint(tarball, instance_type="ml.c6i.xlarge", port=0, loop=loop)
    ep.prepare()  # the port is chosen, the workers load
    thief = socket.socket()
    try:
        with pytest.raises(OSError):  # another process's bind to it, meanwhile
            thief.bind(("127.0.0.1", ep.port))
        ep.start()
        got = httpx.post(ep.url + "/invocations", json={"inputs": TEXTS[:2]}, timeout=60)
        assert got.status_code == 200 and len(got.json()) == 2
    finally:
        thief.close()
        ep.stop()
    with socket.socket() as again:  # and let go once the endpoint stops
        again.bind(("127.0.0.1", ep.port))
