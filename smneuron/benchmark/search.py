"""The highest load that meets an SLO, searched (both benches): bracketing, then bisection on the rate of an open
loop (constant or Poisson), to a stated precision.

``find_max`` asks ``measure(rate)`` for one run at that rate and ``meets(run)`` whether it met every SLO (and why
not). From ``start`` it doubles while the rate passes and halves while it fails, until one passing and one failing
rate bracket the answer; then it bisects until the bracket is within ``precision`` of the passing rate, or
``max_steps`` runs were spent (the report says which). Every run is kept, with its rate, whether it passed and why
not: the search trace.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from smneuron.errors import SmneuronError

R = TypeVar("R")
# requests a run's window must be able to hold for its rate to be judged: the search does not halve below
# MEASURABLE / duration (a rate that brings less than that into a run measures nothing)
MEASURABLE = 2.0


async def find_max(
    measure: Callable[[float], Awaitable[R]],
    meets: Callable[[R], tuple[bool, str]],
    achieved: Callable[[R], float],
    *,
    start: float,
    precision: float = 0.1,
    max_steps: int = 10,
    floor: float = 0.05,
) -> tuple[list[R], dict[str, Any]]:
    """(the runs, the search record: ``best_rate`` (None: nothing passed down to ``floor`` req/s), ``bracket``,
    ``converged``, ``steps``: one entry per run)."""
    runs: list[R] = []
    steps: list[dict[str, Any]] = []
    passing: float | None = None
    failing: float | None = None

    async def trial(rate: float) -> bool:
        run = await measure(rate)
        ok, why = meets(run)
        runs.append(run)
        steps.append(
            {
                "rate": round(rate, 4),
                "achieved": round(achieved(run), 4),
                "passed": ok,
                "why": why or "met every SLO",
            }
        )
        return ok

    rate = start
    while len(steps) < max_steps and (passing is None or failing is None):  # bracket
        if await trial(rate):
            passing = rate
            rate = rate * 2
        else:
            failing = rate
            if rate / 2 < floor:
                break
            rate = rate / 2
        if passing is not None and failing is not None:
            break
    while (
        passing is not None
        and failing is not None
        and (failing - passing) / passing > precision
        and len(steps) < max_steps
    ):  # bisect
        middle = (passing + failing) / 2
        if await trial(middle):
            passing = middle
        else:
            failing = middle
    converged = passing is not None and failing is not None and (failing - passing) / passing <= precision
    return runs, {
        "best_rate": None if passing is None else round(passing, 4),
        "bracket": [
            None if passing is None else round(passing, 4),
            None if failing is None else round(failing, 4),
        ],
        "precision": precision,
        "converged": converged,
        "runs_per_step": 1,
        "max_steps": max_steps,
        "steps": steps,
    }


async def searched(
    closed: Callable[[str, int], Awaitable[R]],
    opened: Callable[[str, float], Awaitable[R]],
    achieved: Callable[[R], float],
    meets: Callable[[R], tuple[bool, str]],
    *,
    max_concurrency: int,
    rate: float | None,
    precision: float,
    floor: float,
    start_floor: float,
    slo: dict[str, Any],
    search: dict | None,
) -> list[R]:
    """The ``find-max`` profile of a bench (``closed`` / ``opened`` as ``profiles.runs`` takes them): from ``rate``,
    else half the measured throughput (at least ``start_floor``), the search on a constant rate; ``search`` gets the
    record with the SLO. The runs: the throughput run when there was one, then one per step."""
    peak = [] if rate else [await closed("throughput", max_concurrency)]
    runs, found = await find_max(
        lambda r: opened("constant", r),
        meets,
        achieved,
        start=rate or max(achieved(peak[0]) / 2, start_floor),
        precision=precision,
        floor=floor,
    )
    if search is not None:
        search.update(found, slo=slo, profile="constant")
    return [*peak, *runs]


def meets_p99(run: Any, slo_p99_ms: float) -> tuple[bool, str]:
    """Whether an open-loop encoder run (``encoder.RunStats``) met the p99 SLO, sent what was asked and failed nothing
    (and why not)."""
    why = []
    if run.requests_failed:
        why.append(f"{run.requests_failed} request(s) failed")
    if run.latency_ms["p99"] > slo_p99_ms:
        why.append(f"p99 {run.latency_ms['p99']:.1f} ms > {slo_p99_ms:g} ms")
    if run.rate and run.throughput_rps < 0.9 * run.rate:
        why.append(f"served {run.throughput_rps:.1f} of the {run.rate:.1f} req/s asked")
    return not why, "; ".join(why)


def meets_stream(run: Any, ttft_ms: float | None, itl_ms: float | None) -> tuple[bool, str]:
    """Whether an open-loop text-generation run (``GenerationRun``) met TTFT p95 and ITL p95, completed every request
    and sent what was asked (and why not)."""
    why = []
    if run.errored or run.incomplete:
        why.append(f"{run.errored + run.incomplete} request(s) failed or did not finish")
    for name, slo, measured in (("TTFT", ttft_ms, run.ttft_ms), ("ITL", itl_ms, run.itl_ms)):
        p95 = (measured or {}).get("p95")
        if slo is not None and (p95 is None or p95 > slo):
            why.append(f"{name} p95 {'-' if p95 is None else f'{p95:.1f}'} ms > {slo:g} ms")
    if run.rate and run.requests_per_s < 0.9 * run.rate:
        why.append(f"served {run.requests_per_s:.2f} of the {run.rate:.2f} req/s asked")
    return not why, "; ".join(why)


def provenance(report: dict) -> str:
    """How a recommendation's rate was found, when the report carries a ``--find-max`` search ("" otherwise): the
    highest searched rate that met the SLO, of how many steps, and whether it converged to its precision."""
    found = report.get("search") or {}
    if found.get("best_rate") is None:
        return ""
    return (
        f" (--find-max: {found['best_rate']:g} req/s was the highest of {len(found['steps'])} searched rates that met "
        f"the SLO, {'converged' if found['converged'] else 'not converged'} to {found['precision']:.0%})"
    )


def unmet(found: dict | None) -> SmneuronError | None:
    """The refusal when a search found no rate that meets the SLO: what the lowest rate tried measured (the floor of
    the endpoint's latency under any load) against the SLO, and the way forward; None when a rate passed."""
    if not found or found.get("best_rate") is not None or not found.get("steps"):
        return None
    served = [s for s in found["steps"] if s.get("achieved")]
    if not served:
        return SmneuronError(
            "No load meets the SLO, and no step served a request: each run was too short for its rate.",
            hint="Raise --duration (or start the search higher with --rate).",
        )
    lowest = min(served, key=lambda s: s["rate"])
    return SmneuronError(
        f"No load meets the SLO: even at {lowest['rate']:g} req/s, the lowest rate that served requests, "
        f"{lowest['why']}. That is this endpoint's latency with next to no load, so no rate can meet the SLO.",
        hint="Relax the SLO to at least what was measured there, or serve on faster hardware (smneuron compare); "
        "the report keeps every step.",
    )
