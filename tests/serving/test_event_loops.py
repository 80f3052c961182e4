"""The model server under the event loops and hosts users have (issue 60 #0).

uvicorn takes uvloop by itself wherever it is installed, and uvloop's ``add_reader`` leaves the server's end of each
worker's socket non-blocking: a reply larger than the socket's buffer then arrived in parts, ``Connection.recv()``
raised ``BlockingIOError`` on the first part, and the pool killed a live worker and failed its batch (78% of requests
with ~85 KB replies at concurrency 16). The CPU layout holds the instance type's vCPUs on any host, so that a number
measured for ml.c6i.xlarge on a 16-core machine is one for 4 vCPUs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import os
import select
import socket
import threading

import httpx
import pytest

from smneuron.artifact.packaging import package
from smneuron.catalog import InstanceType
from smneuron.compilation.encoder import compile_model
from smneuron.local.foreground import describe_layout
from smneuron.serving import frames
from smneuron.serving.server import LocalEndpoint, plan_layout
from smneuron.specs.models import EndpointSpec

BIG = {"blob": os.urandom(3 * 1024 * 1024)}  # fifteen times a Unix socket's default buffer (212,992 bytes)


def test_a_message_larger_than_the_socket_buffer_is_read_whole_in_parts():
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    data, half_sent = frames.encode(BIG), threading.Event()

    def write() -> None:  # half, a pause, the rest: as a large reply arrives
        theirs.sendall(data[: len(data) // 2])
        half_sent.wait(30)
        theirs.sendall(data[len(data) // 2 :])

    writer = threading.Thread(target=write)
    writer.start()
    reader = frames.Reader()
    select.select([ours], [], [])
    first = reader.feed(ours.fileno())
    assert first == (False, None)  # a part: not a message, and not an error (Connection.recv raised here)
    half_sent.set()
    while True:
        select.select([ours], [], [])
        whole, message = reader.feed(ours.fileno())
        if whole:
            break
    writer.join()
    assert message == BIG


def test_the_end_of_the_stream_mid_message_is_a_dead_worker_not_a_message():
    ours, theirs = socket.socketpair()
    theirs.sendall(frames.encode(BIG)[:1000])
    theirs.close()
    with pytest.raises(EOFError):
        frames.recv(ours.fileno(), timeout=5)


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_send_and_receive_on_the_event_loop_in_both_directions(loop):
    """The server's write of a large batch waits for the socket to drain instead of failing (or blocking the loop),
    and its read of a large reply is whole, under each loop."""
    ours, theirs = socket.socketpair()
    ours.setblocking(False)

    def echo() -> None:
        frames.send(theirs.fileno(), frames.recv(theirs.fileno()))

    async def exchange() -> object:
        ev = asyncio.get_running_loop()
        threading.Thread(target=echo).start()
        await frames.send_async(ours.fileno(), BIG)
        got, reader = ev.create_future(), frames.Reader()

        def readable() -> None:
            whole, message = reader.feed(ours.fileno())
            if whole and not got.done():
                ev.remove_reader(ours.fileno())
                got.set_result(message)

        ev.add_reader(ours.fileno(), readable)
        return await asyncio.wait_for(got, 30)

    if loop == "uvloop":
        import uvloop

        assert uvloop.run(exchange()) == BIG
    else:
        assert asyncio.run(exchange()) == BIG


@pytest.fixture(scope="module")
def big_replies(tiny_encoder, tmp_path_factory):
    d = tmp_path_factory.mktemp("loops")
    compile_model(tiny_encoder, d / "a", target="cpu", task="feature-extraction", batch_size=32, buckets="16")
    return package(d / "a", d / "model.tar.gz").path


@pytest.mark.e2e
@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_concurrent_requests_with_replies_larger_than_a_pipe_all_answer(big_replies, loop):
    texts = [f"text number {i}" for i in range(600)]  # 600 embeddings: a reply of about 400 KB
    with LocalEndpoint(big_replies, instance_type="ml.c6i.xlarge", loop=loop) as ep:
        assert type(ep.pool.loop).__module__.split(".")[0] == loop
        with (
            httpx.Client(timeout=120, limits=httpx.Limits(max_connections=16)) as c,
            cf.ThreadPoolExecutor(16) as ex,
        ):
            answers = list(
                ex.map(lambda i: c.post(ep.url + "/invocations", json={"inputs": texts}), range(48))
            )
        assert [a.status_code for a in answers] == [200] * 48
        assert len(answers[0].content) > 212_992  # larger than the socket's buffer
        assert len({a.content for a in answers}) == 1  # every reply whole, the same answer
        assert sum(s.restarts for s in ep.pool.stats) == 0  # no live worker taken for a dead one


def test_the_threads_a_deployed_models_environment_carries_are_sized_again_for_the_cpus_here(monkeypatch):
    """The embedded SageMaker lays out a deployed Model with the environment deploy sized for the instance (4 vCPUs /
    2 workers = 2 threads each); taken as they were on a 2-core machine, 2 workers x 2 threads collapsed the demo's
    throughput run from 77 to 1-28 req/s (a change of 2026-11-28, caught by running the demo)."""
    monkeypatch.setattr("smneuron.serving.server.host_cpus", lambda: [0, 1])
    manifest = {"compiler": {"target": "cpu", "cores_per_model": 1}, "batch_size": 4}
    deployed = EndpointSpec(environment={"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"})
    layout = plan_layout(manifest, InstanceType.parse("ml.c6i.xlarge"), deployed, None)
    assert layout.workers == 2 and layout.env["OMP_NUM_THREADS"] == layout.env["MKL_NUM_THREADS"] == "1"


@pytest.mark.parametrize(
    ("instance", "host", "slot", "cpus", "threads"),
    [
        ("ml.c6i.xlarge", 16, 0, (0, 1, 2, 3), "2"),  # 4 vCPUs of the 16, 2 workers x 2 threads
        ("ml.c6i.xlarge", 16, 1, (4, 5, 6, 7), "2"),  # the endpoint's second instance: CPUs of its own
        ("ml.c6i.xlarge", 2, 0, (0, 1), "1"),  # a smaller host: all it has, said
        ("ml.inf2.xlarge", 16, 0, (0, 1, 2, 3), "2"),  # 4 vCPUs around its 2 NeuronCores
    ],
)
def test_a_cpu_layout_holds_the_instance_types_vcpus_on_any_host(
    monkeypatch, instance, host, slot, cpus, threads
):
    monkeypatch.setattr("smneuron.serving.server.host_cpus", lambda: list(range(host)))
    manifest = {"compiler": {"target": "cpu", "cores_per_model": 1}, "batch_size": 4}
    layout = plan_layout(manifest, InstanceType.parse(instance), EndpointSpec(), None, slot=slot)
    assert layout.cpus == cpus and layout.env["OMP_NUM_THREADS"] == threads
    said = describe_layout(layout)
    if host < InstanceType.parse(instance).vcpus:
        assert "understates" in said and f"{host} CPU(s) where {instance} has 4 vCPUs" in said
    else:
        assert f"on 4 of this machine's {host} CPUs" in said and "understates" not in said


@pytest.mark.e2e
def test_the_workers_run_on_the_cpus_of_the_layout(big_replies, monkeypatch):
    """The affinity is applied in the worker processes, not only planned: here the layout gets one CPU of the host's."""
    last = sorted(os.sched_getaffinity(0))[-1:]
    monkeypatch.setattr("smneuron.serving.server.host_cpus", lambda: last)
    with LocalEndpoint(big_replies, instance_type="ml.c6i.xlarge", workers=1) as ep:
        assert ep.layout.cpus == tuple(last)
        assert [os.sched_getaffinity(pid) for pid in ep.pool.pids()] == [set(last)]
        assert httpx.post(ep.url + "/invocations", json={"inputs": "x"}).status_code == 200
