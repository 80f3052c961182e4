"""Text-generation bench reports: JSON (schema in docs/llm-bench-report.md), CSV, PNG plots, a
self-contained HTML page, ``compare`` for two runs and ``recommend`` for a choice with its arithmetic."""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from smneuron.artifact.kind import GENERATION
from smneuron.benchmark.search import provenance
from smneuron.catalog import PriceTable, price_table
from smneuron.display.cards import png_html
from smneuron.errors import ConfigError
from smneuron.files.user import write_bytes, write_text

CSV_COLUMNS = [
    ("profile", "profile"),
    ("rate", "rate"),
    ("concurrency", "concurrency"),
    ("successful", "successful"),
    ("errored", "errored"),
    ("incomplete", "incomplete"),
    ("duration_s", "duration_s"),
    ("requests_per_s", "requests_per_s"),
    ("output_tokens_per_s", "output_tokens_per_s"),
    ("total_tokens_per_s", "total_tokens_per_s"),
    ("concurrency_mean", "concurrency_mean"),
    *[
        (f"{m}_{q}", f"{m}.{q}")
        for m in ("ttft_ms", "itl_ms", "tpot_ms", "latency_ms")
        for q in ("mean", "p50", "p90", "p95", "p99", "p999")
    ],
    ("goodput_share", "goodput_share"),
    ("goodput_per_s", "goodput_per_s"),
    ("cost_per_million_output_tokens_usd", "cost_per_million_output_tokens_usd"),
    ("cost_per_million_requests_usd", "cost_per_million_requests_usd"),
]


def load(path: str | Path) -> dict:
    """Read a text-generation report (``smneuron bench ... -o report.json``).

    Raises:
        ConfigError: unreadable, or not a text-generation report.
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"Cannot read bench report {path}: {e}") from None
    if data.get("kind") is None or not GENERATION.holds(data) or "runs" not in data:
        raise ConfigError(f"{path} is not a smneuron text-generation bench report.")
    return data


def _get(run: dict, dotted: str):  # type: ignore[no-untyped-def]
    value = run
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def write_csv(report: dict, path: str | Path) -> Path:
    """One row per run: the rates, token throughput, the TTFT/ITL/TPOT/latency distributions, goodput, cost."""
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow([name for name, _ in CSV_COLUMNS])
    for run in report["runs"]:
        w.writerow(["" if (v := _get(run, key)) is None else v for _, key in CSV_COLUMNS])
    return write_text(path, buf.getvalue())


def figures(report: dict) -> dict[str, bytes]:
    """PNG plots: TTFT and ITL vs request rate, output tokens/s vs concurrency, latency histograms."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = sorted(report["runs"], key=lambda r: r["requests_per_s"])
    out = {}

    def save(fig) -> bytes:  # type: ignore[no-untyped-def]
        buf = io.BytesIO()
        fig.tight_layout()
        fig.savefig(buf, format="png", dpi=100)
        plt.close(fig)
        return buf.getvalue()

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, metric, title in (
        (axes[0], "ttft_ms", "time to first token"),
        (axes[1], "itl_ms", "inter-token latency"),
    ):
        for q, style in (("p50", "o-"), ("p95", "s--"), ("p99", "^:")):
            ax.plot(
                [r["requests_per_s"] for r in runs],
                [r[metric].get(q, math.nan) for r in runs],
                style,
                label=q,
            )
        slo = (report.get("slo") or {}).get(metric)
        if slo:
            ax.axhline(slo, color="red", lw=1, label=f"SLO {slo:g} ms")
        ax.set(xlabel="requests/s", ylabel="ms", title=f"{title} vs request rate")
        ax.grid(alpha=0.3)
        ax.legend()
    out["latency_vs_rate"] = save(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    by_conc = sorted(report["runs"], key=lambda r: r["concurrency_mean"])
    ax.plot([r["concurrency_mean"] for r in by_conc], [r["output_tokens_per_s"] for r in by_conc], "o-")
    ax.set(
        xlabel="concurrent requests (time-weighted mean)",
        ylabel="output tokens/s",
        title="tokens/s vs concurrency",
    )
    ax.grid(alpha=0.3)
    out["tokens_vs_concurrency"] = save(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in runs:
        samples = r.get("latency_samples_ms") or []
        if samples:
            ax.hist(samples, bins=30, alpha=0.5, label=run_label(r))
    ax.set(xlabel="request latency (ms)", ylabel="requests", title="latency histograms")
    if any(r.get("latency_samples_ms") for r in runs):
        ax.legend(fontsize=7)
    out["latency_histograms"] = save(fig)
    return out


def figures_html(report: dict) -> str:
    """The report's first plot (TTFT and ITL against the rate) inline; nothing without matplotlib."""
    try:
        figs = figures(report)
    except ImportError:
        return ""
    return "".join(png_html(png, name) for name, png in list(figs.items())[:1])


def run_label(run: dict) -> str:
    if run.get("concurrency"):
        return f"{run['profile']} c={run['concurrency']}"
    return f"{run['profile']} {run['rate']:.2f}/s" if run.get("rate") else run["profile"]


def _dist(key: str, q: str) -> Callable[[dict], str]:
    return lambda r: _ms(r[key], q)


def _given(key: str, form: str) -> Callable[[dict], str]:
    return lambda r: "-" if r.get(key) is None else form.format(r[key])


# A run's cells by column: the HTML report and the terminal's table each pick their columns from here.
RUN_CELLS: dict[str, Callable[[dict], str]] = {
    "run": run_label,
    "req/s": _given("requests_per_s", "{:.2f}"),
    "out tok/s": _given("output_tokens_per_s", "{:.1f}"),
    "conc": _given("concurrency_mean", "{:.1f}"),
    **{f"{name} {q}": _dist(key, q) for name, key in (("TTFT", "ttft_ms"), ("ITL", "itl_ms")) for q in ("p50", "p95", "p99")},
    "TPOT mean": _dist("tpot_ms", "mean"),
    "latency p99": _dist("latency_ms", "p99"),
    "ok / err / incomplete": lambda r: f"{r['successful']} / {r['errored']} / {r['incomplete']}",
    "ok": _given("successful", "{}"),
    "err": _given("errored", "{}"),
    "cut": _given("incomplete", "{}"),
    "goodput": _given("goodput_share", "{:.1%}"),
    "$ / 1M out tok": _given("cost_per_million_output_tokens_usd", "${:.2f}"),
}  # fmt: skip
HTML_COLUMNS = ("run", "req/s", "out tok/s", "TTFT p50", "TTFT p95", "ITL p50", "ITL p95", "TPOT mean",
                "latency p99", "ok / err / incomplete", "goodput", "$ / 1M out tok")  # fmt: skip
TERMINAL_COLUMNS = ("run", "req/s", "out tok/s", "conc", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "TPOT mean",
                    "ok", "err", "cut", "goodput", "$ / 1M out tok")  # fmt: skip


def run_cells(run: dict, columns: tuple[str, ...]) -> list[str]:
    """One run's cells for ``columns`` (names in ``RUN_CELLS``)."""
    return [RUN_CELLS[c](run) for c in columns]


def write_pngs(report: dict, directory: str | Path) -> list[Path]:
    return [write_bytes(Path(directory) / f"{name}.png", data) for name, data in figures(report).items()]


def write_html(report: dict, path: str | Path) -> Path:
    """One self-contained HTML file: the summary, a table per run, the plots inline (no network)."""
    e = html.escape
    images = "".join(
        f'<figure><img alt="{e(name)}" src="data:image/png;base64,{base64.b64encode(data).decode()}"></figure>'
        for name, data in figures(report).items()
    )
    head = list(HTML_COLUMNS)
    rows = "".join(
        "<tr>" + "".join(f"<td>{e(c)}</td>" for c in run_cells(r, HTML_COLUMNS)) + "</tr>"
        for r in report["runs"]
    )
    facts = {
        "target": report["target"],
        "instance": f"{report.get('instance_type') or '?'} x {report.get('instance_count')}",
        "tp / copies": f"{report.get('tensor_parallel_size') or '-'} / {report.get('copies') or '-'}",
        "price": f"${report['hourly_usd']:.3f}/h ({report.get('price_source')})"
        if report.get("hourly_usd")
        else "-",
        "load": json.dumps(report.get("load", {})),
        "SLO": json.dumps({k: v for k, v in (report.get("slo") or {}).items() if v is not None}) or "-",
        "highest rate meeting goodput": f"{report['best_good_rate']:.2f} req/s"
        if report.get("best_good_rate")
        else "-",
        "created": report.get("created_at", ""),
    }
    summary = "".join(f"<tr><th>{e(k)}</th><td>{e(str(v))}</td></tr>" for k, v in facts.items())
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>smneuron bench: {e(report["target"])}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2rem;color:#222}}table{{border-collapse:collapse;margin:1rem 0}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}th{{background:#f3f3f3;text-align:left}}
figure{{display:inline-block;margin:0.5rem}}img{{max-width:100%}}</style></head>
<body><h1>Text-generation benchmark</h1>
<table id="summary">{summary}</table>
<h2>Runs</h2><table id="runs"><tr>{"".join(f"<th>{e(h)}</th>" for h in head)}</tr>{rows}</table>
<h2>Plots</h2>{images}
<p>Metrics as GuideLLM defines them: TTFT = first token - start; ITL = (last - first token) / (output tokens - 1);
TPOT = (last token - start) / output tokens; percentiles by linear interpolation.</p>
</body></html>
"""
    return write_text(path, page)


def _ms(dist: dict, q: str) -> str:
    return "-" if q not in dist else f"{dist[q]:.1f} ms"


def compare(a: dict, b: dict) -> list[dict]:
    """Runs of two reports side by side (matched in order), with b / a ratios of the key metrics."""
    rows = []
    for i, (ra, rb) in enumerate(zip(a["runs"], b["runs"], strict=False)):
        row: dict = {"run": i, "a": run_label(ra), "b": run_label(rb)}
        for name, key in (
            ("output_tokens_per_s", "output_tokens_per_s"),
            ("requests_per_s", "requests_per_s"),
            ("ttft_p50_ms", "ttft_ms.p50"),
            ("itl_p50_ms", "itl_ms.p50"),
            ("latency_p99_ms", "latency_ms.p99"),
            ("cost_per_million_output_tokens_usd", "cost_per_million_output_tokens_usd"),
        ):
            va, vb = _get(ra, key), _get(rb, key)
            row[name] = (va, vb, (vb / va) if va and vb is not None else None)
        rows.append(row)
    return rows


def sustainable(
    report: dict, *, ttft_ms: float | None, itl_ms: float | None, quantile: str = "p95"
) -> dict | None:
    """The run with the highest request rate whose TTFT and ITL (at ``quantile``) meet the SLOs; None if none."""
    meeting = [
        r
        for r in report["runs"]
        if r["successful"]
        and (ttft_ms is None or r["ttft_ms"].get(quantile, math.inf) <= ttft_ms)
        and (itl_ms is None or r["itl_ms"].get(quantile, math.inf) <= itl_ms)
    ]
    return max(meeting, key=lambda r: r["requests_per_s"]) if meeting else None


@dataclass
class Choice:
    instance_type: str
    tensor_parallel_size: int | None
    copies_per_instance: int | None
    copies_needed: int
    instances: int
    hourly_usd: float | None
    rate_per_copy: float
    arithmetic: str


def recommend(
    reports: list[dict],
    *,
    rate: float,
    ttft_ms: float | None,
    itl_ms: float | None,
    quantile: str = "p95",
    prices: PriceTable | Mapping[str, float] | None = None,
) -> list[Choice]:
    """The cheapest instance type x tp x copies meeting TTFT/ITL SLOs (at ``quantile``) at ``rate`` requests/s.

    Each report measured some copies of one layout; a copy's sustainable rate is the highest
    per-copy request rate of a run meeting the SLOs. Copies needed = ceil(rate / that); instances =
    ceil(copies / copies per instance); cost = instances x price. Sorted cheapest first.
    """
    table = price_table(prices)
    out = []
    for rep in reports:
        copies = int(rep.get("copies") or 1)
        per_instance = int(rep.get("copies_per_instance") or copies)
        best = sustainable(rep, ttft_ms=ttft_ms, itl_ms=itl_ms, quantile=quantile)
        if best is None:
            continue
        per_copy = best["requests_per_s"] / copies
        need = math.ceil(rate / per_copy)
        instances = math.ceil(need / per_instance)
        hourly = table.for_report(rep)
        cost = hourly * instances if hourly else None
        arithmetic = (
            f"{run_label(best)}: {best['requests_per_s']:.2f} req/s over {copies} copies = {per_copy:.2f} per copy "
            f"(TTFT {quantile} {best['ttft_ms'].get(quantile, 0):.0f} ms, ITL {quantile} {best['itl_ms'].get(quantile, 0):.1f} ms); "
            f"ceil({rate:g} / {per_copy:.2f}) = {need} copies; ceil({need} / {per_instance}) = {instances} instance(s)"
            + (f" x ${hourly:.3f}/h = ${cost:.2f}/h" if cost else "")
            + provenance(rep)
        )
        out.append(
            Choice(
                rep.get("instance_type") or "?",
                rep.get("tensor_parallel_size"),
                per_instance,
                need,
                instances,
                cost,
                per_copy,
                arithmetic,
            )
        )
    return sorted(out, key=lambda c: (c.hourly_usd is None, c.hourly_usd or 0, c.instances))
