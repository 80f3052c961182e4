"""One profile measured twice: by a SageMaker AI benchmark job inside the account (AIPerf, next to the endpoint) and by
smneuron's bench from where it runs (`smneuron bench NAME --in-account`, ``smneuron.bench_in_account_and_here``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from smneuron.artifact.kind_settings import SETTINGS, refuse_foreign
from smneuron.benchmark.endpoint import bench_here, target_kind
from smneuron.benchmark.jobs import InAccount, comparison, run_in_account
from smneuron.benchmark.prompts import lengths
from smneuron.errors import UsageError
from smneuron.session import Session
from smneuron.specs.bench_settings import (
    BENCH,
    IN_ACCOUNT_REQUESTS,
    OUTPUT_TOKENS,
    PROMPT_TOKENS,
    BenchRequest,
)


@dataclass
class MeasuredTwice:
    """The job's measurement, the bench's report of the same profile, and the table rows that set them side by side."""

    job: InAccount
    local: dict
    rows: list[list[str]]

    def to_dict(self) -> dict[str, Any]:
        return {"benchmark_job": self.job.to_dict(), "local": self.local, "comparison": self.rows}


IN_ACCOUNT_CONCURRENCY = 1  # the job's closed loop when none is given (AIPerf's concurrency)
# what an in-account run reads of a bench request: one closed loop of synthetic prompts; anything else given (a rate,
# a duration, SLOs, a dataset) would be dropped, so it is refused
READS = (
    "in_account",
    "concurrency",
    "concurrencies",
    "prompt_tokens",
    "output_tokens",
    "max_requests",
    "tokenizer",
)
# the CLI's outputs that an in-account run writes (the JSON report) or whose kind it checks
WRITES = ("csv", "html", "png_dir", "plot")


def bench_in_account_and_here(
    endpoint: str | None,
    request: BenchRequest,
    *,
    where: str = "sdk",
    session: Session | None = None,
    on_status: Callable[[str, float], None] | None = None,
) -> MeasuredTwice:
    """Run the profile as a SageMaker AI benchmark job, then the same profile with smneuron's bench from here
    (``smneuron.bench(name, in_account=True, ...)``).

    Args:
        endpoint: the SageMaker endpoint (a text-generation one: the job drives OpenAI chat completions).
        request: the bench request: its ``concurrency`` (one level), ``max_requests`` (50), ``prompt_tokens`` /
            ``output_tokens`` (64 / 128) and ``tokenizer`` shape the closed loop both run.
        on_status: called with the job's status and the seconds it has run, as it is polled.

    Raises:
        UsageError: a URL instead of an endpoint name; a setting an in-account run does not read; more than one level.
        ConfigError: a setting of the other kind (an encoder endpoint). What ``run_in_account`` and ``bench_here`` raise.
    """
    given = request.given()
    if given.get("url") or not endpoint:
        raise UsageError(
            "--in-account runs the load inside the AWS account against a SageMaker endpoint: give its name, not --url."
        )
    sess = session or Session.from_env()
    marks = {BENCH[k].name: "flag" for k in given if BENCH[k].name in SETTINGS}
    kind, _ = target_kind(endpoint, None, marks, session=sess)
    refuse_foreign(kind, marks, where=where, scope="bench")
    unread = [BENCH[k].label(where) for k in given if k not in READS and k not in WRITES]
    if unread:
        raise UsageError(
            f"--in-account runs one closed loop of synthetic prompts; it does not read {', '.join(unread)}.",
            hint="Leave them out, or bench without --in-account.",
        )
    levels = given.get("concurrencies") or [given.get("concurrency", IN_ACCOUNT_CONCURRENCY)]
    if len(levels) > 1:
        raise UsageError(
            "--in-account runs one closed loop (AIPerf's concurrency): give one level, e.g. --concurrency 4.",
        )
    prompt = lengths(given.get("prompt_tokens", PROMPT_TOKENS), BENCH["prompt_tokens"].label(where))
    output = lengths(given.get("output_tokens", OUTPUT_TOKENS), BENCH["output_tokens"].label(where))
    count = given.get("max_requests", IN_ACCOUNT_REQUESTS)
    job = run_in_account(endpoint, prompt_tokens=prompt, output_tokens=output, concurrency=levels[0],
                         request_count=count, session=sess, on_status=on_status)  # fmt: skip
    here = BENCH.parse(
        {
            "profile": "concurrent",
            "concurrencies": levels,
            "max_requests": count,
            "prompt_tokens": prompt,
            "output_tokens": output,
            "tokenizer": given.get("tokenizer"),
            "duration_s": 600,
            "warmup_s": 0,
            "cooldown_s": 0,
        }  # fmt: skip
    )
    local = bench_here(endpoint, None, here, session=sess, where=where).to_dict()
    return MeasuredTwice(job, local, comparison(job, local["runs"][0]))
