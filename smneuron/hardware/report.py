"""The report of ``smneuron compare``: one row per instance type, the recommendation with its arithmetic, JSON, a
self-contained HTML page and a plot (latency vs throughput per type, $ per 1M requests per type).

The arithmetic is ``bench.report``'s: the run a type sustains under the SLO (``sustainable``) and, for a rate,
the cheapest count (``recommend``). A month is 730 hours (AWS's pricing convention).

One module because the table, the JSON, the HTML page, the plot and the notebook card are renderings of one
computation (``rows`` and ``recommendation``) and must never disagree.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from smneuron.benchmark.encoder import cost_per_million
from smneuron.benchmark.report import Option, recommend, sustainable
from smneuron.display.cards import Card, Displayed, png_html
from smneuron.files.user import write_bytes, write_text

HOURS_PER_MONTH = 730
MEASURED = "measured"
# every row has these keys (None where a type was not measured or missed the SLO)
FIGURES = ("run", "rps_per_instance", "p50_ms", "p99_ms", "cost_per_million_usd", "instances", "monthly_usd")


@dataclass
class Candidate:
    """One instance type in a comparison and what became of it."""

    instance_type: str
    target: str
    status: str = MEASURED  # measured | not compiled | not served | bench failed
    reason: str = ""  # why it was not measured
    endpoint: str | None = None
    component: str | None = None  # text generation: the inference component measured
    copies: int | None = None  # text generation: the copies on the one instance measured
    layout: str = ""  # the serving layout its plan gave it: "2 workers x 2 threads", "2 copies x tp 1"
    hourly_usd: float | None = None
    price_source: str = ""  # where the hourly price comes from (a URL and its terms, an estimate's rule)
    price_kind: str = "none"  # list | estimate | override | none: the table's short form of the source
    report: dict | None = None  # the bench report (``Report.to_dict()``)
    latencies_ms: list[float] = field(default_factory=list, repr=False)  # the busiest run's, for the plot


@dataclass(repr=False)
class Comparison(Displayed):
    """Instance types measured under one load. ``rows()`` and ``recommendation()`` hold the arithmetic.

    This class compares encoders (requests, p50/p99 under a p99 SLO); ``hardware.generation_report`` overrides
    the per-type figures, the fleet arithmetic and the columns for text generation (output tokens, TTFT, ITL).
    """

    workload = "encoder"
    figures = FIGURES
    throughput_key = "rps_per_instance"  # per-type throughput, the ratio in "vs chosen"
    throughput_unit = "req/s"
    cost_key = "cost_per_million_usd"  # $ per 1M of ``cost_unit``
    cost_unit = "request"

    model: str
    task: str
    where: str
    caveat: str  # what the measurements do and do not say (empty on AWS)
    load: dict
    rate: float | None
    slo_p99_ms: float | None
    candidates: list[Candidate]
    notes: list[str] = field(default_factory=list)
    # every type measured on one host (the embedded SageMaker): types given the same serving layout measured the
    # same thing, so their throughput is pooled and price alone tells them apart
    one_host: bool = False
    removed: list[str] = field(default_factory=list)
    left_behind: list[str] = field(default_factory=list)
    created_at: str = ""

    @property
    def measured(self) -> list[Candidate]:
        return [c for c in self.candidates if c.status == MEASURED and c.report]

    def rows(self) -> list[dict]:
        """Per instance type: the run it sustains under the SLO, req/s per instance, p50/p99 of that run, $ per
        1M requests, instances for the rate, $ per month (for the rate, else per instance), and against the
        recommendation."""
        rec = self.recommendation()
        rows = self._rows()
        chosen = next((r for r in rows if rec and r["instance_type"] == rec["instance_type"]), None)
        for row in rows:
            row["chosen"] = bool(chosen) and row["instance_type"] == chosen["instance_type"]
            row["vs_recommended"] = None
            if chosen and row.get(self.throughput_key):
                cpm, base = row.get(self.cost_key), chosen.get(self.cost_key)
                row["vs_recommended"] = {
                    "throughput": row[self.throughput_key] / chosen[self.throughput_key],
                    "cost_per_million": cpm / base if cpm and base else None,
                }
        return rows

    def _rows(self) -> list[dict]:
        out = []
        for c in self.candidates:
            row: dict = {
                "instance_type": c.instance_type,
                "target": c.target,
                "status": c.status,
                "reason": c.reason,
                "hourly_usd": c.hourly_usd,
                "price_source": c.price_source,
                "price_kind": c.price_kind,
                "layout": c.layout,
                **dict.fromkeys(self.figures),
            }
            if c.status == MEASURED and c.report:
                self._figures(c, row)
            out.append(row)
        if self.one_host:
            self._pool(out)
        return out

    def _pool(self, rows: list[dict]) -> None:
        """Measured on one host, types with the same layout ran the same servers on the same CPUs: their difference
        is noise (``workflow.same_layout_notes``), so each gets the group's mean req/s per instance and the figures
        that follow from it; the recommendation then turns on price alone. ``measured_rps_per_instance`` keeps
        each type's own figure."""
        groups: dict[str, list[dict]] = {}
        for r in rows:
            if r.get("rps_per_instance"):
                groups.setdefault(r["layout"], []).append(r)
        for group in (g for g in groups.values() if len(g) > 1):
            mean = sum(r["rps_per_instance"] for r in group) / len(group)
            for r in group:
                instances = math.ceil(self.rate / mean) if self.rate else None
                r.update(
                    measured_rps_per_instance=r["rps_per_instance"],
                    rps_per_instance=mean,
                    cost_per_million_usd=cost_per_million(mean, r["hourly_usd"]),
                    instances=instances,
                    monthly_usd=(instances or 1) * r["hourly_usd"] * HOURS_PER_MONTH
                    if r["hourly_usd"]
                    else None,
                    pooled_with=[x["instance_type"] for x in group if x is not r],
                )

    def _figures(self, c: Candidate, row: dict) -> None:
        """Fill ``row`` with the figures of the run ``c`` sustains under the SLO, or say why there is none."""
        found = sustainable(c.report, self.slo_p99_ms)  # type: ignore[arg-type]
        if found is None:
            lowest = min(r["latency_ms"]["p99"] for r in c.report["runs"] if r["requests_ok"])  # type: ignore[index]
            row["reason"] = f"no run met p99 <= {self.slo_p99_ms:g} ms (the lowest p99 was {lowest:.1f} ms)"
            return
        run, per_instance = found
        instances = math.ceil(self.rate / per_instance) if self.rate else None
        row.update(
            run=_label(run),
            rps_per_instance=per_instance,
            p50_ms=run["latency_ms"]["p50"],
            p99_ms=run["latency_ms"]["p99"],
            cost_per_million_usd=cost_per_million(per_instance, c.hourly_usd),
            instances=instances,
            monthly_usd=(instances or 1) * c.hourly_usd * HOURS_PER_MONTH if c.hourly_usd else None,
        )

    def _options(self) -> list[Option]:
        """For a rate: each type's fleet that serves it under the SLO, cheapest first (``bench.report``); on one
        host, a type with the same layout as another is sized on the pooled throughput (``_pool``)."""
        options = recommend([c.report for c in self.measured], self.slo_p99_ms, self.rate)  # type: ignore[misc, arg-type]
        pooled = {r["instance_type"]: r for r in self._rows() if r.get("pooled_with")}
        for o in options:
            row = pooled.get(o.instance_type)
            if row is None:
                continue
            o.sustainable_rps_per_instance, o.instances = row["rps_per_instance"], row["instances"]
            o.cost_per_hour = o.instances * o.hourly_usd if o.hourly_usd else None
            o.arithmetic += (
                f"; the same layout as {', '.join(row['pooled_with'])} on one host: sized on their mean "
                f"{row['rps_per_instance']:.1f} req/s per instance, ceil({self.rate:g} / {row['rps_per_instance']:.1f}) "
                f"= {o.instances}"
                + (f" x ${o.hourly_usd:.3f}/h = ${o.cost_per_hour:.2f}/h" if o.cost_per_hour else "")
            )
        return sorted(options, key=lambda o: (o.cost_per_hour is None, o.cost_per_hour or 0))

    def _cost_line(self, row: dict) -> str:
        return (
            f"{row['instance_type']}: ${row['hourly_usd']:.3f}/h / 3600 s / {row['rps_per_instance']:.1f} req/s x 1e6 "
            f"= ${row['cost_per_million_usd']:.3f} per 1M requests ({row['run']} run, p99 {row['p99_ms']:.1f} ms)"
        )

    def recommendation(self) -> dict | None:
        """The instance type to choose and why, or None when no type was measured under the SLO.

        With a rate: the cheapest count of instances that serves it under the SLO (``bench.report.recommend``).
        Without: the lowest $ per 1M requests at the load each type sustains. Without prices: the highest
        throughput per instance, saying so.
        """
        rows = [r for r in self._rows() if r.get(self.throughput_key)]
        if not rows:
            return None
        unit = self.cost_unit
        if self.rate:
            options = self._options()
            best = options[0]
            lines = [f"{o.instance_type}: {o.arithmetic}" for o in options]
            if best.cost_per_hour is None:
                return _choice(best.instance_type, "no price known for any type: the fewest instances", lines)
            monthly = best.cost_per_hour * HOURS_PER_MONTH
            why = (
                f"{best.instances} x {best.instance_type} serve {self.rate:g} req/s{self._under()} for "
                f"${best.cost_per_hour:.2f}/hour = ${monthly:,.0f}/month ({HOURS_PER_MONTH} h)"
            )
            others = [o for o in options[1:] if o.cost_per_hour]
            if others:
                why += "; " + ", ".join(
                    f"{o.instances} x {o.instance_type} cost {o.cost_per_hour / best.cost_per_hour:.1f}x that"
                    for o in others
                )
            return _choice(best.instance_type, why, lines, instances=best.instances, monthly_usd=monthly)
        cost, speed = self.cost_key, self.throughput_key
        priced = sorted((r for r in rows if r.get(cost)), key=lambda r: r[cost])
        lines = [self._cost_line(r) for r in priced]
        if not priced:
            best_row = max(rows, key=lambda r: r[speed])
            return _choice(
                best_row["instance_type"],
                "no price known for any type: the highest throughput per instance "
                f"({best_row[speed]:.1f} {self.throughput_unit})",
                [f"{r['instance_type']}: {r[speed]:.1f} {self.throughput_unit} per instance" for r in rows],
            )
        best_row = priced[0]
        why = f"the lowest cost per {unit}{self._under()}: ${best_row[cost]:.3f} per 1M {unit}s"
        if priced[1:]:
            why += "; " + ", ".join(
                f"{r['instance_type']} costs {r[cost] / best_row[cost]:.1f}x as much per {unit}"
                for r in priced[1:]
            )
        return _choice(best_row["instance_type"], why, lines + ["(give --target-rps to size a fleet)"])

    def price_lines(self) -> list[str]:
        """Each price kind in the table and its source, once."""
        kinds: dict[str, set[str]] = {}
        for c in self.candidates:
            source = (
                c.price_source
                if c.price_source.startswith(c.price_kind)
                else f"{c.price_kind}: {c.price_source}"
            )
            kinds.setdefault(source, set()).add(c.instance_type)
        return [f"{kind} ({', '.join(sorted(types))})" for kind, types in kinds.items()]

    def _under(self) -> str:
        """The SLO, as it follows a figure: " at p99 <= 100 ms"."""
        return f" at p99 <= {self.slo_p99_ms:g} ms" if self.slo_p99_ms else ""

    def rate_text(self) -> str:
        return f"{self.rate:g} req/s" if self.rate else ""

    def load_text(self) -> str:
        """The load every type got, in words."""
        load = self.load
        return (
            f"{load['profile']} profile, {load['duration_s']:g} s per run, up to {load['concurrency']} in flight, "
            f"{load['payloads']} distinct requests ({load['source']})"
            + (", OpenAI embeddings shape" if load.get("openai") else "")
        )

    def head(self) -> list[str]:
        """The table's columns: the type, its figures (``figure_head``), then the fleet columns every table shares."""
        fleet = f"instances for {self.rate_text()}" if self.rate else "instances"
        return ["instance", "target", *self.figure_head(), "price", fleet, "$/month", "layout", "vs chosen"]

    def cells(self, row: dict) -> list[str]:
        """One row of the table as text (what was not measured says why in the first figure's place)."""
        if not row.get(self.throughput_key):
            dashes = ["-"] * (len(self.figure_head()) - 1)
            return [
                row["instance_type"],
                row["target"],
                _short(row),
                *dashes,
                row["price_kind"],
                "-",
                "-",
                "-",
                "-",
            ]
        return [row["instance_type"], row["target"], *self.figure_cells(row), *fleet_cells(row, self.rate)]

    def figure_head(self) -> list[str]:
        return ["req/s per instance", "p50 ms", "p99 ms", "$/1M req"]

    def figure_cells(self, row: dict) -> list[str]:
        return [
            f"{row['rps_per_instance']:.1f} ({row['run']})",
            f"{row['p50_ms']:.1f}",
            f"{row['p99_ms']:.1f}",
            money_cell(row.get("cost_per_million_usd")),
        ]

    def run_table(self, c: Candidate) -> tuple[list[str], list[list[str]]]:
        """The runs of one type's bench, for the HTML page."""
        head = ["run", "ok", "failed", "req/s", "p50 ms", "p99 ms", "$/1M req"]
        return head, [
            [
                _label(r),
                str(r["requests_ok"]),
                str(r["requests_failed"]),
                f"{r['throughput_rps']:.1f}",
                f"{r['latency_ms']['p50']:.1f}",
                f"{r['latency_ms']['p99']:.1f}",
                money_cell(r.get("cost_per_million_usd")),
            ]
            for r in c.report["runs"]  # type: ignore[index]
        ]

    def plot_latency(self, ax) -> None:  # type: ignore[no-untyped-def]
        """The left panel: p99 latency against throughput per measured type, the SLO dashed."""
        for c in self.measured:
            runs = sorted(
                (r for r in c.report["runs"] if r["requests_ok"]), key=lambda r: r["throughput_rps"]
            )  # type: ignore[index]
            ax.plot(
                [r["throughput_rps"] for r in runs],
                [r["latency_ms"]["p99"] for r in runs],
                "o-",
                label=c.instance_type,
            )
        if self.slo_p99_ms:
            ax.axhline(self.slo_p99_ms, color="grey", linestyle="--", label=f"SLO p99 {self.slo_p99_ms:g} ms")
        ax.set_xlabel("throughput (requests/s per instance)")
        ax.set_ylabel("p99 latency (ms)")

    def to_dict(self) -> dict:
        data = {k: v for k, v in asdict(self).items() if k != "candidates"}
        data["candidates"] = [
            {k: v for k, v in asdict(c).items() if k != "latencies_ms"} for c in self.candidates
        ]
        data["rows"] = self.rows()
        data["recommendation"] = self.recommendation()
        return {"kind": "hardware-comparison", "workload": self.workload, **data}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def plot_png(self) -> bytes:
        """Left: p99 latency against throughput, one line per measured type (the SLO dashed). Right: $ per 1M
        requests per type at the load it sustains."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.4))
        self.plot_latency(ax1)
        ax1.set_title("latency vs throughput")
        ax1.grid(alpha=0.3)
        ax1.legend(fontsize=8)
        rows = self._rows()
        names = [r["instance_type"] for r in rows]
        costs = [r.get(self.cost_key) or 0 for r in rows]
        bars = ax2.bar(range(len(rows)), costs, color="#4a7ebb")
        for bar, row in zip(bars, rows, strict=True):
            text = f"${row[self.cost_key]:.2f}" if row.get(self.cost_key) else _short(row)
            ax2.annotate(
                text,
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
                fontsize=8,
            )
        ax2.set_xticks(range(len(rows)), names, rotation=15, fontsize=8)
        ax2.set_ylabel(f"$ per 1M {self.cost_unit}s")
        ax2.set_title(f"cost per {self.cost_unit}" + self._under())
        fig.suptitle(f"{self.model}: {self.where}", fontsize=10)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        plt.close(fig)
        return buf.getvalue()

    def plot(self, path: str | Path) -> Path:
        return write_bytes(path, self.plot_png())

    def write_json(self, path: str | Path) -> Path:
        return write_text(path, self.to_json())

    def write_html(self, path: str | Path) -> Path:
        """One self-contained HTML page (no scripts, no network): the table, the recommendation with its
        arithmetic, what was not measured and why, the plot, and every type's runs."""
        return write_text(path, self.html())

    def html(self) -> str:
        e = html.escape
        rec = self.recommendation()
        body = "".join(
            "<tr>" + "".join(f"<td>{e(c)}</td>" for c in self.cells(r)) + "</tr>" for r in self.rows()
        )
        parts = [
            "<!doctype html><html><head><meta charset='utf-8'>",
            f"<title>smneuron compare: {e(self.model)}</title>",
            "<style>body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#eee}"
            "td:first-child{text-align:left}.rec{background:#eef6ee;padding:8px;border:1px solid #9c9}"
            ".caveat{background:#fff6e0;padding:8px;border:1px solid #db6}pre{white-space:pre-wrap}</style>",
            "</head><body>",
            f"<h1>Which instance for {e(self.model)} ({e(self.task)})?</h1>",
            f"<p>Measured on: {e(self.where)}. Load: {e(self.load_text())}"
            + (f"; rate {e(self.rate_text())}" if self.rate else "")
            + (f"; SLO{e(self._under().removeprefix(' at'))}" if self._under() else "")
            + f". {e(self.created_at)}</p>",
        ]
        if self.caveat:
            parts.append(f"<p class='caveat'>{e(self.caveat)}</p>")
        parts.append(
            "<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in self.head()) + f"</tr>{body}</table>"
        )
        if rec:
            parts.append(
                f"<div class='rec'><b>Recommendation: {e(rec['instance_type'])}</b>: {e(rec['why'])}"
                f"<pre>{e(chr(10).join(rec['arithmetic']))}</pre></div>"
            )
        else:
            parts.append(
                "<div class='caveat'><b>No recommendation</b>: no instance type was measured under the SLO.</div>"
            )
        missing = [r for r in self.rows() if r["reason"]]
        if missing:
            parts.append("<h3>Not measured</h3><ul>")
            parts += [
                f"<li><b>{e(r['instance_type'])}</b> ({e(r['status'])}): {e(r['reason'])}</li>"
                for r in missing
            ]
            parts.append("</ul>")
        parts.append(
            "<h3>Prices</h3><ul>" + "".join(f"<li>{e(x)}</li>" for x in self.price_lines()) + "</ul>"
        )
        if self.notes:
            parts.append("<h3>Artifacts</h3><ul>" + "".join(f"<li>{e(n)}</li>" for n in self.notes) + "</ul>")
        try:
            png = self.plot_png()
            parts.append(
                f"<figure><img alt='comparison plot' style='max-width:100%' "
                f"src='data:image/png;base64,{base64.b64encode(png).decode()}'></figure>"
            )
        except ImportError:
            parts.append("<p>(No plot: matplotlib is not installed; install smneuron[bench].)</p>")
        for c in self.measured:
            head, runs = self.run_table(c)
            parts.append(
                f"<h3>{e(c.instance_type)} ({e(c.target)}, {e(c.layout)}), endpoint {e(c.endpoint or '')}</h3>"
                + "<table><tr>"
                + "".join(f"<th>{e(h)}</th>" for h in head)
                + "</tr>"
                + "".join("<tr>" + "".join(f"<td>{e(v)}</td>" for v in run) + "</tr>" for run in runs)
                + "</table>"
            )
        parts.append("</body></html>")
        return "".join(parts)

    def _card(self) -> Card:
        rec = self.recommendation()
        title = f"compare {self.model}: " + (
            f"choose {rec['instance_type']}" if rec else "no type met the SLO"
        )
        try:
            plot = png_html(self.plot_png(), "comparison plot")
        except ImportError:
            plot = ""
        e = html.escape
        extra = (
            f"<p>{e(rec['why'])}</p><pre>{e(chr(10).join(rec['arithmetic']))}</pre>" if rec else ""
        ) + plot
        if self.caveat:
            extra = f"<p><i>{e(self.caveat)}</i></p>" + extra
        return Card(
            title=title,
            brief=f"{self.model!r}, {len(self.measured)} of {len(self.candidates)} types measured"
            + (f", choose {rec['instance_type']}" if rec else ""),
            table=(self.head(), [self.cells(r) for r in self.rows()]),
            extra_html=extra,
        )


def fleet_cells(row: dict, rate: float | None) -> list[str]:
    """The last columns every table shares: price kind, instances, $/month, layout, against the chosen type."""
    vs = row.get("vs_recommended") or {}
    versus = "chosen" if row.get("chosen") else ""
    if not versus and vs:
        versus = f"{vs['throughput']:.2f}x throughput" + (
            f", {vs['cost_per_million']:.2f}x cost" if vs.get("cost_per_million") else ""
        )
    return [
        row["price_kind"],
        str(row["instances"]) if rate else "1",
        "-" if row.get("monthly_usd") is None else f"${row['monthly_usd']:,.0f}",
        row.get("layout") or "-",
        versus or "-",
    ]


def _choice(instance_type: str, why: str, arithmetic: list[str], **more: object) -> dict:
    return {"instance_type": instance_type, "why": why, "arithmetic": arithmetic, **more}


def _short(row: dict) -> str:
    """Why a type has no figures, in a few words (the full reason is in ``reason``)."""
    if row["status"] != MEASURED:
        return row["status"]
    return "missed the SLO"


def _label(run: dict) -> str:
    if run.get("rate") is not None:
        return f"{run['profile']} {run['rate']:.1f}/s"
    if run.get("concurrency") is not None and run["profile"] != "synchronous":
        return f"{run['profile']} x{run['concurrency']}"
    return run["profile"]


def money_cell(value: float | None) -> str:
    return "-" if value is None else f"${value:.3f}"
