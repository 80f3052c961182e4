"""`smneuron transform`'s settings, each declared once: ``TRANSFORM``.

A transform job serves the same Model a deploy would (deploy's rows: the instance, workers, the controls a security
team asks for, tags and container variables), so those rows are deploy's own objects; its own are where the records
come from and go, how many instances, how much each request carries and how long the model may take on one.
"""

from __future__ import annotations

import dataclasses

from smneuron.specs.deploy_settings import DEPLOY
from smneuron.specs.models import field_at
from smneuron.specs.options import Option, Options

MAX_PAYLOAD_MB = (
    100  # AWS Developer Guide, CreateTransformJob: MaxPayloadInMB and MaxConcurrentTransforms x it <= 100
)
PAYLOAD_MB = (
    1  # a request's records by default: short texts by the thousand, an answer well within the timeout
)
INVOCATION_TIMEOUT_S = 600  # ModelClientConfig.InvocationsTimeoutInSeconds (botocore: 1-3600), unless given

TRANSFORM = Options(
    "transform",
    [
        Option(
            "input",
            "--input",
            type=str,
            help="The records: an s3:// prefix, or a local JSON Lines file or folder (uploaded first).",
        ),
        Option(
            "output",
            "--output",
            type=str,
            help="s3:// prefix for the answers, KEY.out per input object (default: beside the uploaded input).",
        ),
        dataclasses.replace(
            DEPLOY["instance"],
            help="Instance type: Batch Transform's (ml.inf2, CPU and GPU types; not ml.inf1; ml.trn1 not yet by "
            "smneuron) (default ml.inf2.xlarge).",
        ),  # fmt: skip
        Option(
            "count", "--count", type=int, least=1, default=1, help="Instances the records are spread over."
        ),
        dataclasses.replace(DEPLOY["workers"], kind=None),
        Option(
            "max_payload_mb",
            "--max-payload-mb",
            type=int,
            least=1,
            most=MAX_PAYLOAD_MB,
            default=PAYLOAD_MB,
            help="Records per request, by size (MaxPayloadInMB; times the workers at most 100).",
        ),
        Option(
            "invocation_timeout",
            "--invocation-timeout",
            type=int,
            least=1,
            most=3600,
            default=INVOCATION_TIMEOUT_S,
            help="Seconds the model may take on one request (default 600, or sized from --bench-report).",
        ),
        Option(
            "bench_report",
            "--bench-report",
            type=str,
            help="A `smneuron bench --json` report of the model: the invocation timeout is sized from its measured "
            "rate (3x the time a request of --max-payload-mb takes).",
        ),
        Option("name", "--name", type=str, help="Job name prefix (default: from the artifact)."),
        Option(
            "model",
            "--model",
            type=str,
            help="A SageMaker Model that exists (a deploy's, the pipeline's) to run as it is, instead of an artifact.",
        ),
        *(DEPLOY[k] for k in ("env", "subnets", "security_groups", "network_isolation", "kms_key", "tags")),
    ],  # fmt: skip
    model="TransformRequest",
    fields=field_at,
)
TransformRequest = TRANSFORM.model
