"""What to do with bench reports: plot them, compare two, and pick the cheapest instance for an SLO."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smneuron.benchmark.search import provenance
from smneuron.catalog import PriceTable, price_table
from smneuron.display.cards import png_html
from smneuron.errors import ConfigError
from smneuron.files.user import write_bytes


def load(path: str | Path) -> dict:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ConfigError(
            f"Cannot read bench report {path}: {why}.",
            hint="Pass reports `smneuron bench ... -o FILE.json` wrote (one per run to compare).",
        ) from e
    if "runs" not in data:
        raise ConfigError(f"{path} is not a smneuron bench report (no 'runs').")
    return data


def plot(report: dict, latencies_ms: list[float] | None, out: str | Path) -> Path:
    """PNG file: p50/p99 latency against throughput across the runs, and a latency histogram."""
    return write_bytes(out, plot_png(report, latencies_ms))


def plot_png(report: dict, latencies_ms: list[float] | None) -> bytes:
    """The PNG of ``plot`` as bytes (a notebook shows it inline)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = sorted(report["runs"], key=lambda r: r["throughput_rps"])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for q, style in (("p50", "o-"), ("p99", "s--")):
        ax1.plot([r["throughput_rps"] for r in runs], [r["latency_ms"][q] for r in runs], style, label=q)
    ax1.set_xlabel("throughput (requests/s)")
    ax1.set_ylabel("latency (ms)")
    ax1.set_title("latency vs throughput")
    ax1.legend()
    ax1.grid(alpha=0.3)
    if latencies_ms:
        ax2.hist(latencies_ms, bins=40, color="#4a7ebb")
    ax2.set_xlabel("latency (ms)")
    ax2.set_ylabel("requests")
    ax2.set_title("latency histogram (highest-throughput run)")
    fig.suptitle(f"{report['target']} ({report.get('instance_type') or 'instance ?'})")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def plot_html(report: dict, latencies_ms: list[float] | None) -> str:
    """The plot inline for a notebook, or nothing where matplotlib (smneuron[bench]) is not installed."""
    try:
        return png_html(plot_png(report, latencies_ms), "latency vs throughput")
    except ImportError:
        return ""


def compare(a: dict, b: dict) -> list[dict[str, Any]]:
    """Runs of two reports side by side (matched by profile and order), with b / a ratios."""
    rows = []
    for i, (ra, rb) in enumerate(zip(a["runs"], b["runs"], strict=False)):
        row = {
            "run": i,
            "profile": ra["profile"]
            if ra["profile"] == rb["profile"]
            else f"{ra['profile']}/{rb['profile']}",
        }
        for key, get in (
            ("throughput_rps", lambda r: r["throughput_rps"]),
            ("p50_ms", lambda r: r["latency_ms"]["p50"]),
            ("p99_ms", lambda r: r["latency_ms"]["p99"]),
            ("cost_per_million_usd", lambda r: r.get("cost_per_million_usd")),
        ):
            va, vb = get(ra), get(rb)
            row[key] = (va, vb, (vb / va) if va and vb else None)
        rows.append(row)
    return rows


def sustainable(
    report: dict, latency_p99_ms: float | None, headroom: float = 1.0
) -> tuple[dict, float] | None:
    """The run a report can sustain under the SLO and its req/s per instance, or None when no run meets it.

    The run is the highest-throughput one whose p99 <= ``latency_p99_ms`` (any run without an SLO); req/s per
    instance = its throughput / the instances it ran on x ``headroom``.
    """
    count = max(1, int(report.get("instance_count", 1)))
    ok = [
        r
        for r in report["runs"]
        if r["requests_ok"] and (latency_p99_ms is None or r["latency_ms"]["p99"] <= latency_p99_ms)
    ]
    if not ok:
        return None
    best = max(ok, key=lambda r: r["throughput_rps"])
    return best, best["throughput_rps"] / count * headroom


@dataclass
class Option:
    instance_type: str
    sustainable_rps_per_instance: float
    instances: int
    hourly_usd: float | None
    cost_per_hour: float | None
    source: str
    arithmetic: str


def recommend(
    reports: list[dict],
    latency_p99_ms: float | None,
    rate: float,
    prices: PriceTable | Mapping[str, float] | None = None,
    headroom: float = 1.0,
) -> list[Option]:
    """The cheapest instance type and count that serves ``rate`` req/s at p99 <= the SLO.

    For each report: sustainable req/s per instance = the highest throughput among its runs whose
    p99 meets the SLO (any run without one), divided by the instances it ran on, times ``headroom``; instances needed =
    ceil(rate / that); cost = instances x hourly price. Options come back cheapest first (types
    without a price last); types that never meet the SLO are left out.
    """

    if not (isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0):
        raise ConfigError(
            f"The rate to serve must be above 0 requests per second, got {rate!r}.",
            hint="For example --target-rps 200.",
        )
    if latency_p99_ms is not None and not latency_p99_ms > 0:
        raise ConfigError(
            f"The p99 SLO must be above 0 ms, got {latency_p99_ms!r}.", hint="For example --slo-p99-ms 100."
        )
    table = price_table(prices)
    options = []
    for rep in reports:
        itype = rep.get("instance_type")
        if not itype:
            of = f" of {rep['target']}" if rep.get("target") else ""
            raise ConfigError(
                f"A bench report{of} does not say which instance type it measured.",
                hint="Rerun `smneuron bench` with --instance TYPE (a bench of a SageMaker endpoint reads its type).",
            )
        count = max(1, int(rep.get("instance_count", 1)))
        found = sustainable(rep, latency_p99_ms, headroom)
        if found is None:
            continue
        best, per_instance = found
        n = max(1, math.ceil(rate / per_instance))
        hourly = table.for_report(rep)
        cost = n * hourly if hourly else None
        arithmetic = (
            f"{best['profile']} run: {best['throughput_rps']:.1f} req/s at p99 {best['latency_ms']['p99']:.1f} ms "
            f"on {count} instance(s) -> {per_instance:.1f} req/s each; ceil({rate:g} / {per_instance:.1f}) = {n}"
            + (f"; {n} x ${hourly:.3f}/h = ${cost:.2f}/h" if cost else "; no price")
            + provenance(rep)
        )
        options.append(Option(itype, per_instance, n, hourly, cost, rep.get("target", ""), arithmetic))
    return sorted(options, key=lambda o: (o.cost_per_hour is None, o.cost_per_hour or 0))
