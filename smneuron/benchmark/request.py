"""``smneuron.bench``: the one bench verb, which `smneuron bench` calls too.

Keywords -> the typed request (``specs.bench_settings.BENCH``: types, ranges, a setting without the one it needs) ->
from here (``endpoint.bench_here``) or, with ``in_account``, as a SageMaker AI benchmark job and from here
(``in_account.bench_in_account_and_here``). The verdict on a report (too many failures, an unmet search) is
``profiles.verdict``'s, for a notebook as for the CLI.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smneuron.benchmark.encoder import Report
from smneuron.benchmark.endpoint import bench_here
from smneuron.benchmark.generation import GenerationReport
from smneuron.benchmark.in_account import MeasuredTwice, bench_in_account_and_here
from smneuron.benchmark.targets import room_for
from smneuron.session import Session
from smneuron.specs.bench_settings import BENCH, BenchRequest


@BENCH.signature
def bench(
    name: str | None = None,
    texts: list[str] | None = None,
    *,
    session: Session | None = None,
    where: str = "sdk",
    on_status: Callable[[str, float], None] | None = None,
    on_start: Callable[[str], None] | None = None,
    request: BenchRequest | None = None,
    **settings: Any,
) -> Report | GenerationReport | MeasuredTwice:
    """Benchmark the endpoint ``name`` as it is deployed (or a server's ``url``).

    The endpoint says what it serves and on what (one read): its kind refuses the other kind's settings, and its
    instance type, count, copies and tensor-parallel size fill the report's cost unless given (``serving_source`` says
    which). A URL says nothing: it is text generation when a text-generation setting is given, else an encoder.

    Args:
        name: the SageMaker endpoint (or give ``url``).
        texts: encoder inputs to send (cycled); else ``data`` (a JSONL file) or texts generated from ``tokenizer``.
        where: "cli" or "sdk": how a refused setting is named (``--copies`` or ``copies=``).
        on_status: with ``in_account``: the job's status and the seconds it has run, as it is polled.
        on_start: from here, a profile of several runs: how long it will take, in words, once the target was read and
            the requests made (a refusal comes first and alone), before the first request.
        request: the typed request as it is (``BenchRequest``), instead of keywords.

    Returns:
        ``Report`` (encoders) or ``GenerationReport`` (text generation): a table and a plot in a notebook;
        with ``in_account``, the job's and this machine's measurements side by side (``MeasuredTwice``).

    Raises:
        NotFoundError: no such endpoint.
        UsageError: a number out of range, a setting without the one it needs, a setting the run does not read.
        ConfigError: no target, a setting of the other kind, no inputs, an unknown profile.
        SmneuronError: nothing listens at ``url``. BenchFailedError: every request failed.
    """
    req = BENCH.parse(request if request is not None else settings, where=where)
    room_for(req.concurrency, *(req.concurrencies or []))  # type: ignore[attr-defined]
    if req.in_account:  # type: ignore[attr-defined]
        return bench_in_account_and_here(name, req, where=where, session=session, on_status=on_status)
    return bench_here(name, texts, req, session=session, where=where, on_start=on_start)
