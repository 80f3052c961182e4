"""One profile measured twice: by a SageMaker AI benchmark job inside the account (AIPerf, next to the endpoint) and by
smneuron's bench from where it runs (`smneuron bench NAME --in-account`, ``smneuron.bench_in_account_and_here``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smneuron.benchmark.endpoint import bench_endpoint, target_kind
from smneuron.benchmark.jobs import InAccount, comparison, run_in_account
from smneuron.benchmark.prompts import Lengths
from smneuron.errors import UsageError
from smneuron.session import Session


@dataclass
class MeasuredTwice:
    """The job's measurement, the bench's report of the same profile, and the table rows that set them side by side."""

    job: InAccount
    local: dict
    rows: list[list[str]]

    def to_dict(self) -> dict[str, Any]:
        return {"benchmark_job": self.job.to_dict(), "local": self.local, "comparison": self.rows}


IN_ACCOUNT_CONCURRENCY = 1  # the job's closed loop when none is given (AIPerf's concurrency)


def bench_in_account_and_here(
    endpoint: str | None,
    *,
    url: str | None = None,
    concurrency: int = IN_ACCOUNT_CONCURRENCY,
    prompt_tokens: Lengths | None = None,
    output_tokens: Lengths | None = None,
    request_count: int = 50,
    tokenizer: str | Path | None = None,
    given: Mapping[str, str] | None = None,
    where: str = "sdk",
    session: Session | None = None,
    on_status: Callable[[str, float], None] | None = None,
) -> MeasuredTwice:
    """Run the profile as a SageMaker AI benchmark job, then the same profile with smneuron's bench from here.

    Args:
        endpoint: the SageMaker endpoint (a text-generation one: the job drives OpenAI chat completions).
        concurrency, request_count: the closed loop both run (AIPerf's concurrency and request count).
        prompt_tokens, output_tokens: the synthetic prompts (64 / 128 tokens by default).
        given: the other bench settings the caller gave (setting -> "flag"): the endpoint's kind refuses those of the
            other kind, as ``bench_endpoint`` does.
        on_status: called with the job's status and the seconds it has run, as it is polled.

    Raises:
        UsageError: a URL instead of an endpoint name. ConfigError: a setting of the other kind (an encoder endpoint).
        What ``run_in_account`` and ``bench_endpoint`` raise.
    """
    if url or not endpoint:
        raise UsageError(
            "--in-account runs the load inside the AWS account against a SageMaker endpoint: give its name, not --url."
        )
    sess = session or Session.from_env()
    marks = {**(given or {}), "in_account": "flag"}
    kind, _ = target_kind(endpoint, None, marks, session=sess)
    kind.refuse_foreign(marks, where=where, scope="bench")
    prompt, output = prompt_tokens or Lengths(64), output_tokens or Lengths(128)
    job = run_in_account(
        endpoint,
        prompt_tokens=prompt,
        output_tokens=output,
        concurrency=concurrency,
        request_count=request_count,
        session=sess,
        on_status=on_status,
    )
    local = bench_endpoint(
        endpoint,
        session=sess,
        tokenizer=tokenizer,
        profile="concurrent",
        concurrencies=[concurrency],
        max_requests=request_count,
        prompt_tokens=prompt,
        output_tokens=output,
        duration_s=600,
        warmup_s=0,
        cooldown_s=0,
    ).to_dict()
    return MeasuredTwice(job, local, comparison(job, local["runs"][0]))
