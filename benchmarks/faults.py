"""Each fault of issue 47, made on purpose against `smneuron local up`, and what the caller saw; prints one table.

- a copy killed mid-stream: what boto3's InvokeEndpointWithResponseStream raises, and how soon;
- the service killed -9 right after N acknowledged writes (S3 PUTs and CreateModel calls): how many survive a restart;
- the processes it started: how long they outlive a kill -9 of the service;
- restart to first answer: `local up` after the kill until a restored encoder endpoint answers;
- 5 MB requests: one alone, and a small request beside two of them (one per worker of a 2-worker endpoint);
- a worker's memory (RSS, summed over the endpoint's workers) before and after a burst of 5 MB requests.

Everything runs on loopback in a state directory of its own, and is removed at the end.

python benchmarks/faults.py [--writes 200]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import boto3
from local_service import cli, down, environment, marked


def model_workers(state: Path) -> list[int]:
    """The encoder endpoint's worker processes: forked from a forkserver, not running in a copy's model directory."""
    out = []
    for pid in marked(state):
        try:
            parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if b"forkserver" in Path(
                f"/proc/{parent}/cmdline"
            ).read_bytes() and "smneuron-llm-" not in os.readlink(f"/proc/{pid}/cwd"):
                out.append(pid)
        except (OSError, ValueError, IndexError):
            continue
    return out


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            pass
    return total / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--writes", type=int, default=200)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="smneuron-faults-"))
    state = work / "state"
    env = environment(state)
    rows: list[tuple[str, str, str]] = []
    try:
        from smneuron.local.tiny_model import build_tiny_bert, build_tiny_llama

        build_tiny_bert(work / "bert")
        build_tiny_llama(work / "llama")
        cli(env, "compile", str(work / "bert"), "-o", str(work / "enc"), "--target", "cpu")
        cli(
            env,
            "compile",
            str(work / "llama"),
            "-o",
            str(work / "gen"),
            "--target",
            "cpu",
            "--sequence-length",
            "512",
        )
        up = json.loads(cli(env, "local", "up", "--json"))
        kw = {"region_name": "us-east-1", "endpoint_url": up["url"]}
        keys = json.loads((state / "credentials.json").read_text())
        kw.update(
            aws_access_key_id=keys["AWS_ACCESS_KEY_ID"], aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"]
        )
        cli(env, "--local", "deploy", str(work / "enc"), "--instance", "ml.c6i.xlarge", "--name", "enc")
        cli(env, "--local", "deploy", str(work / "gen"), "--instance", "ml.c6i.xlarge", "--name", "chat")

        # 1. a copy killed mid-stream
        sm, runtime = boto3.client("sagemaker", **kw), boto3.client("sagemaker-runtime", **kw)
        component = sm.list_inference_components()["InferenceComponents"][0]["InferenceComponentName"]
        body = json.dumps(
            {"prompt": "once upon a time", "max_tokens": 400, "ignore_eos": True, "stream": True}
        )
        answer = runtime.invoke_endpoint_with_response_stream(
            EndpointName="chat", InferenceComponentName=component, Body=body, ContentType="application/json"
        )
        events = iter(answer["Body"])
        next(events)
        copies = [p for p in marked(state) if "smneuron-llm-" in os.readlink(f"/proc/{p}/cwd")]
        killed = time.monotonic()
        for pid in copies:
            os.kill(pid, signal.SIGKILL)
        try:
            for _ in events:
                pass
            seen = "a short success (a defect)"
        except Exception as e:  # what boto3 raises for the error event
            seen = f"{type(e).__name__}: {getattr(e, 'response', {}).get('Error', {}).get('Code', '?')}"
        rows.append(
            ("copy killed mid-stream", seen, f"{(time.monotonic() - killed) * 1000:.0f} ms after the kill")
        )

        # 5 MB requests, and memory
        big = json.dumps({"inputs": "word " * 1_000_000}).encode()
        t = time.perf_counter()
        runtime.invoke_endpoint(EndpointName="enc", Body=big, ContentType="application/json")
        rows.append(("5 MB request alone", "answered", f"{time.perf_counter() - t:.2f} s"))
        workers = model_workers(state)
        before = rss_mb(workers)
        with cf.ThreadPoolExecutor(3) as ex:
            bigs = [ex.submit(runtime.invoke_endpoint, EndpointName="enc", Body=big, ContentType="application/json")
                    for _ in range(2)]  # fmt: skip
            t = time.perf_counter()
            runtime.invoke_endpoint(
                EndpointName="enc", Body=b'{"inputs": "small"}', ContentType="application/json"
            )
            small = time.perf_counter() - t
            for f in bigs:
                f.result()
        rows.append(("small request beside two 5 MB ones", "answered", f"{small:.2f} s"))
        for _ in range(20):
            runtime.invoke_endpoint(EndpointName="enc", Body=big, ContentType="application/json")
        after = rss_mb(workers)
        rows.append(
            (
                f"worker memory ({len(workers)} workers), 20 x 5 MB",
                f"{before:.0f} -> {after:.0f} MB",
                f"{(after / before - 1) * 100:+.1f}%",
            )
        )

        # 2. kill -9 right after acknowledged writes; 3. orphans; 4. restart to first answer
        s3 = boto3.client("s3", **kw)
        s3.create_bucket(Bucket="faults")
        for i in range(args.writes):
            s3.put_object(Bucket="faults", Key=f"k{i}", Body=f"acknowledged {i}".encode())
        sm.create_model(ModelName="acked-last", ExecutionRoleArn="arn:aws:iam::123456789012:role/r",
                        PrimaryContainer={"Image": "x"})  # fmt: skip
        os.kill(up["pid"], signal.SIGKILL)
        killed = time.monotonic()
        while marked(state) and time.monotonic() - killed < 30:
            time.sleep(0.02)
        rows.append(("processes after kill -9 of the service", f"{len(marked(state))} left", f"gone in "
                     f"{(time.monotonic() - killed) * 1000:.0f} ms"))  # fmt: skip
        started = time.monotonic()
        up = json.loads(cli(env, "local", "up", "--json"))
        kw["endpoint_url"] = up["url"]
        runtime, s3, sm = (boto3.client(s, **kw) for s in ("sagemaker-runtime", "s3", "sagemaker"))
        while True:
            try:
                runtime.invoke_endpoint(
                    EndpointName="enc", Body=b'{"inputs": "hi"}', ContentType="application/json"
                )
                break
            except Exception:
                if time.monotonic() - started > 120:
                    raise
                time.sleep(0.1)
        rows.append(
            ("restart to first answer", "encoder endpoint answered", f"{time.monotonic() - started:.1f} s")
        )
        kept = sum(1 for page in s3.get_paginator("list_objects_v2").paginate(Bucket="faults")
                   for _ in page.get("Contents", []))  # fmt: skip
        model = any(m["ModelName"] == "acked-last" for m in sm.list_models()["Models"])
        rows.append(
            (
                f"{args.writes} acknowledged PUTs + a CreateModel, then kill -9",
                f"{kept}/{args.writes} objects kept",
                "the Model kept" if model else "the Model LOST",
            )  # fmt: skip
        )
    finally:
        down(env)
        shutil.rmtree(work, ignore_errors=True)
    width = max(len(r[0]) for r in rows)
    print(f"{'fault':{width}}  {'what the caller saw':36}  measured")
    for fault, seen, measured in rows:
        print(f"{fault:{width}}  {seen:36}  {measured}")


if __name__ == "__main__":
    main()
