"""How a transform job feeds its instances, decided once for `smneuron transform` and the pipeline's EvaluateTransform:
``Feeding`` (the batching: MultiRecord or SingleRecord, the payload, the concurrency, the container's limits) and
``timeout_from_report`` (the invocation timeout from a bench report's measured rate).

May import: smneuron.errors, smneuron.specs.transform_settings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from smneuron.errors import ConfigError, UsageError
from smneuron.specs.transform_settings import MAX_PAYLOAD_MB

JSON_LINES = "application/jsonlines"


@dataclass(frozen=True)
class Feeding:
    """How a transform job feeds its instances, the one definition of it: `smneuron transform`'s jobs and the
    pipeline's EvaluateTransform step are built from it. MultiRecord sends as many JSON lines as fit ``payload_mb`` in
    one request (``inference.py`` answers them one per line); SingleRecord one line a request, for inputs whose
    lines are whole request bodies (the pipeline's). Each instance takes as many requests at a time as it has
    workers, within SageMaker's MaxConcurrentTransforms x MaxPayloadInMB <= 100."""

    workers: int
    payload_mb: int
    single: bool = False

    @property
    def content_type(self) -> str:
        return "application/json" if self.single else JSON_LINES

    def check(self, label: str) -> None:
        """Raises UsageError: more than 100 MB in flight per instance (``label``: the payload setting as given)."""
        if self.workers * self.payload_mb > MAX_PAYLOAD_MB:
            raise UsageError(
                f"{label} {self.payload_mb} x {self.workers} worker(s) is {self.workers * self.payload_mb} MB in "
                f"flight per instance; SageMaker takes at most {MAX_PAYLOAD_MB} (MaxConcurrentTransforms x "
                "MaxPayloadInMB).",
                hint=f"Give {label} {MAX_PAYLOAD_MB // self.workers} or less, or fewer workers.",
            )

    def job_fields(self) -> dict[str, Any]:
        """CreateTransformJob's fields for it (the input's and output's beside the S3 locations)."""
        return {
            "MaxConcurrentTransforms": self.workers,
            "MaxPayloadInMB": self.payload_mb,
            "BatchStrategy": "SingleRecord" if self.single else "MultiRecord",
        }

    def sdk_transformer(self) -> dict[str, Any]:
        """The SageMaker SDK's ``Transformer(...)`` keywords for it (the pipeline's TransformStep)."""
        return {
            "strategy": self.job_fields()["BatchStrategy"], "max_payload": self.payload_mb,
            "max_concurrent_transforms": self.workers, "accept": self.content_type, "assemble_with": "Line",
        }  # fmt: skip

    def sdk_transform(self) -> dict[str, Any]:
        """The SDK's ``Transformer.transform(...)`` keywords for it."""
        return {"content_type": self.content_type, "split_type": "Line"}

    def environment(self) -> dict[str, str]:
        """What the Model's container needs for requests of this size: TorchServe's limits and inference.py's input
        count, raised (an answer, an embedding per line, is far larger than its line: up to 64 times)."""
        size = self.payload_mb * 2**20
        return {
            "TS_MAX_REQUEST_SIZE": str(max(size, 6_553_500)),
            "TS_MAX_RESPONSE_SIZE": str(max(64 * size, 6_553_500)),
            "SMNEURON_MAX_INPUTS": str(max(1024, size // 8)),  # a line is at least a few bytes: "a"\n
        }


SAFETY = 3  # the invocation timeout over the time a request is expected to take
ASSUMED_LINE_BYTES = 64  # an s3:// input's lines are not read before the job: a short text's, said when used


def timeout_from_report(report: dict, instance: str, workers: int, payload_mb: int,
                        line_bytes: float | None) -> tuple[int, str]:  # fmt: skip
    """The invocation timeout for requests of ``payload_mb`` of lines, from a bench report's rate: 3x the time one
    takes when ``workers`` of them share an instance that answers the report's best records/s; (seconds, why).

    Raises:
        ConfigError: the report measured nothing. UsageError: a request would need more than botocore's 3600 s.
    """
    runs = [r for r in report.get("runs", []) if r.get("requests_ok")]
    if not runs:
        raise ConfigError("The bench report measured no run (no request answered in any).",
                          hint="Pass a report of a bench that ran (`smneuron bench ENDPOINT --json > report.json`).")  # fmt: skip
    rate = max(r["throughput_rps"] for r in runs) / max(1, int(report.get("instance_count", 1)))
    size = line_bytes or ASSUMED_LINE_BYTES
    records = payload_mb * 2**20 / size
    takes = records * workers / rate
    seconds = max(60, math.ceil(SAFETY * takes))
    if seconds > 3600:
        raise UsageError(
            f"A request of {payload_mb} MB (~{records:,.0f} records) would take ~{takes:,.0f} s at the bench report's "
            f"{rate:,.1f} records/s per instance: more than the 3600 s SageMaker allows one.",
            hint=f"Give --max-payload-mb {max(1, int(payload_mb * 3600 / SAFETY / takes))} or less.",
        )
    on = report.get("instance_type")
    why = (f"invocation timeout {seconds} s: {SAFETY}x the ~{takes:,.1f} s a request of ~{records:,.0f} records "
           f"({payload_mb} MB of {'the input' if line_bytes else 'assumed'} {size:,.0f}-byte lines) takes at the bench "
           f"report's {rate:,.1f} records/s per instance, {workers} at a time"
           + (f" (measured on {on})" if on and on != instance else ""))  # fmt: skip
    return seconds, why
