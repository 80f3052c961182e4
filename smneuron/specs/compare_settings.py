"""`smneuron compare`'s settings, each declared once: ``COMPARE``.

A comparison benches the same load on every type and compiles the model once per target, so its rows are the
bench's (``BENCH``: the load, its SLOs) and compile's (``COMPILE``: the shapes, every key but the target, which each
type's family sets), the same objects with the same types, ranges and help; its own are the fleet's target
(``--target-rps``, never ``--rate``, which is the bench's) and the prices.
"""

from __future__ import annotations

import dataclasses

from smneuron.specs.bench_settings import BENCH
from smneuron.specs.compile_settings import COMPILE
from smneuron.specs.models import field_at
from smneuron.specs.options import Option, Options

PROMPT_TOKENS, OUTPUT_TOKENS = 256, 128  # a comparison's synthetic text-generation requests, unless given
LOAD = ("profile", "duration_s", "concurrency", "concurrencies", "rate", "rates", "warmup_s", "cooldown_s")

COMPARE = Options(
    "compare",
    [
        Option(
            "target_rps",
            "--target-rps",
            type=float,
            above=0,
            help="Requests per second to serve: sizes a fleet per type (and its cost).",
        ),
        *(BENCH[k] for k in ("slo_p99_ms", "slo_ttft_ms", "slo_itl_ms", "data")),
        dataclasses.replace(BENCH["prompt_tokens"], default=PROMPT_TOKENS),
        dataclasses.replace(BENCH["output_tokens"], default=OUTPUT_TOKENS),
        *(BENCH[k] for k in (*LOAD, "openai")),
        *(o for o in COMPILE if o.keyword != "target"),
        Option(
            "prices",
            "--price",
            type=dict[str, float],
            many=True,
            help="TYPE=USD: an hourly price over the catalog's (repeat).",
        ),
    ],  # fmt: skip
    model="CompareRequest",
    fields=field_at,
)
CompareRequest = COMPARE.model
COMPILED = tuple(
    o.keyword for o in COMPARE if (o.key or "").startswith("compile.")
)  # what each target compiles with
