"""`smneuron tune`'s settings, each declared once: ``TUNE``.

The grid (batch sizes x bucket sets), the requests (``--data``), what the pick must meet (an SLO, a throughput) and
the load each candidate is measured under. The target and task are compile's own rows.
"""

from __future__ import annotations

import dataclasses

from smneuron.specs.compile_settings import COMPILE
from smneuron.specs.options import Option, Options

_BATCH = COMPILE.bounds(COMPILE["batch_size"])  # each batch size tried: compile's own range

TUNE = Options(
    "tune",
    [
        dataclasses.replace(
            COMPILE["target"],
            key=None,
            type=str,
            default="cpu",
            help="cpu (here), cuda (with a GPU), inf1/inf2 (where the Neuron runtime is) (default cpu).",
        ),  # fmt: skip
        dataclasses.replace(
            COMPILE["task"],
            key=None,
            type=str,
            help="The encoder's task: text-classification, "
            "feature-extraction, token-classification or question-answering (default: from config.json).",
        ),  # fmt: skip
        Option(
            "batch_sizes",
            "--batch-sizes",
            type=list[int],
            comma=True,
            least=_BATCH.least,
            most=_BATCH.most,
            help="Batch sizes to try (default: compile's for the model's size class, halved and doubled).",
        ),  # fmt: skip
        Option(
            "bucket_sets",
            "--bucket-set",
            type=list[str],
            many=True,
            help="A bucket set to try, e.g. 32,64,128 (repeat; default: compile's ladder and its longest alone).",
        ),  # fmt: skip
        Option(
            "data",
            "--data",
            type=str,
            help="Your texts (JSON Lines, as bench takes them): sent, and buckets placed on them.",
        ),  # fmt: skip
        Option(
            "slo_p99_ms", "--slo-p99-ms", type=float, above=0, help="p99 under load the pick must meet (ms)."
        ),
        Option("min_throughput", "--min-throughput", type=float, above=0, help="req/s the pick must reach."),
        Option(
            "instance",
            "--instance",
            type=str,
            help="Served as this instance type (workers, $ per 1M; default the target's first).",
        ),  # fmt: skip
        Option(
            "concurrency",
            "--concurrency",
            type=int,
            least=1,
            most=1024,
            default=32,
            help="Requests in flight when measuring throughput.",
        ),  # fmt: skip
        Option(
            "seconds",
            "--seconds",
            type=float,
            least=2,
            most=600,
            default=4.0,
            help="Seconds per measured run.",
        ),
    ],
    model="TuneSettings",
)
TuneSettings = TUNE.model
