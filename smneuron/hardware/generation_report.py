"""The report of ``smneuron compare`` for text generation: output tokens per second per instance, TTFT and ITL, $ per
1M output tokens, and the fleet for a request rate under TTFT / ITL SLOs.

The arithmetic is ``bench.generation_report``'s (the same that ``smneuron recommend`` applies to LLM bench reports):
the run a type sustains is the highest request rate whose TTFT and ITL meet the SLOs at p95; copies needed =
ceil(rate / that run's req/s per copy); instances = ceil(copies / copies per instance). Everything else (the page,
the plot, the JSON, what was not measured and why) is ``hardware.report.Comparison``'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from smneuron.benchmark import generation_report
from smneuron.benchmark.report import Option
from smneuron.hardware.report import (
    HOURS_PER_MONTH,
    Candidate,
    Comparison,
    money_cell,
)

FIGURES = (
    "run",
    "rps_per_instance",
    "output_tokens_per_s_per_instance",
    "ttft_p50_ms",
    "ttft_p95_ms",
    "itl_p50_ms",
    "itl_p95_ms",
    "cost_per_million_output_tokens_usd",
    "instances",
    "monthly_usd",
)


@dataclass(repr=False)
class GenerationComparison(Comparison):
    """Instance types measured under one text-generation load (streamed, the same prompts for every type)."""

    slo_ttft_ms: float | None = None
    slo_itl_ms: float | None = None
    quantile: str = "p95"  # the quantile the SLOs hold at (``smneuron recommend``'s)

    workload = "text-generation"
    figures = FIGURES
    throughput_key = "output_tokens_per_s_per_instance"
    throughput_unit = "output tokens/s"
    cost_key = "cost_per_million_output_tokens_usd"
    cost_unit = "output token"

    def _figures(self, c: Candidate, row: dict) -> None:
        report = c.report or {}
        q = self.quantile
        run = generation_report.sustainable(
            report, ttft_ms=self.slo_ttft_ms, itl_ms=self.slo_itl_ms, quantile=q
        )
        if run is None:
            ok = [r for r in report["runs"] if r["successful"]]
            lowest = min(ok, key=lambda r: r["ttft_ms"].get(q, math.inf))
            row["reason"] = (
                f"no run met{self._under()} (the lowest TTFT {q} was {lowest['ttft_ms'].get(q, 0):.0f} ms, "
                f"its ITL {q} {lowest['itl_ms'].get(q, 0):.1f} ms)"
            )
            return
        share = _share(report)  # the fraction of an instance the measured copies held
        rps, tokens = run["requests_per_s"] / share, run["output_tokens_per_s"] / share
        option = self._option(c)
        row.update(
            run=generation_report.run_label(run),
            rps_per_instance=rps,
            output_tokens_per_s_per_instance=tokens,
            ttft_p50_ms=run["ttft_ms"].get("p50"),
            ttft_p95_ms=run["ttft_ms"].get(q),
            itl_p50_ms=run["itl_ms"].get("p50"),
            itl_p95_ms=run["itl_ms"].get(q),
            cost_per_million_output_tokens_usd=c.hourly_usd / 3600 / tokens * 1e6
            if c.hourly_usd and tokens
            else None,
            instances=option.instances if option else None,
            monthly_usd=(option.instances if option else 1) * c.hourly_usd * HOURS_PER_MONTH
            if c.hourly_usd
            else None,
        )

    def _option(self, c: Candidate) -> Option | None:
        """The fleet of type ``c`` for the rate (None without a rate or when no run met the SLOs)."""
        if not self.rate:
            return None
        choices = generation_report.recommend(
            [c.report],
            rate=self.rate,
            ttft_ms=self.slo_ttft_ms,
            itl_ms=self.slo_itl_ms,
            quantile=self.quantile,
        )  # type: ignore[list-item]
        if not choices:
            return None
        choice = choices[0]
        return Option(
            c.instance_type,
            choice.rate_per_copy * (choice.copies_per_instance or 1),
            choice.instances,
            c.hourly_usd,
            choice.hourly_usd,
            c.price_source,
            choice.arithmetic,
        )

    def _options(self) -> list[Option]:
        options = [o for o in (self._option(c) for c in self.measured) if o]
        return sorted(options, key=lambda o: (o.cost_per_hour is None, o.cost_per_hour or 0, o.instances))

    def _cost_line(self, row: dict) -> str:
        return (
            f"{row['instance_type']}: ${row['hourly_usd']:.3f}/h / 3600 s / "
            f"{row['output_tokens_per_s_per_instance']:.1f} output tokens/s x 1e6 = "
            f"${row['cost_per_million_output_tokens_usd']:.3f} per 1M output tokens ({row['run']} run, "
            f"TTFT {self.quantile} {row['ttft_p95_ms']:.0f} ms, ITL {self.quantile} {row['itl_p95_ms']:.1f} ms)"
        )

    def _under(self) -> str:
        slos = [
            f"{name} {self.quantile} <= {value:g} ms"
            for name, value in (("TTFT", self.slo_ttft_ms), ("ITL", self.slo_itl_ms))
            if value
        ]
        return f" at {' and '.join(slos)}" if slos else ""

    def load_text(self) -> str:
        load = self.load
        levels = (
            f"concurrencies {', '.join(str(c) for c in load['concurrencies'])}"
            if load.get("concurrencies")
            else f"up to {load['concurrency']} in flight"
        )
        return (
            f"{load['profile']} profile, {load['duration_s']:g} s per run, {levels}, {load['requests']} distinct "
            f"streamed requests ({load['source']})"
        )

    def figure_head(self) -> list[str]:
        q = self.quantile
        return ["out tok/s per instance", "req/s", f"TTFT p50/{q} ms", f"ITL p50/{q} ms", "$/1M out tok"]

    def figure_cells(self, row: dict) -> list[str]:
        return [
            f"{row['output_tokens_per_s_per_instance']:.1f} ({row['run']})",
            f"{row['rps_per_instance']:.2f}",
            f"{row['ttft_p50_ms']:.0f} / {row['ttft_p95_ms']:.0f}",
            f"{row['itl_p50_ms']:.1f} / {row['itl_p95_ms']:.1f}",
            money_cell(row.get("cost_per_million_output_tokens_usd")),
        ]

    def run_table(self, c: Candidate) -> tuple[list[str], list[list[str]]]:
        q = self.quantile
        head = [
            "run",
            "ok",
            "errored",
            "cut",
            "req/s",
            "out tok/s",
            f"TTFT p50/{q}",
            f"ITL p50/{q}",
            "$/1M out tok",
        ]
        return head, [
            [
                generation_report.run_label(r),
                str(r["successful"]),
                str(r["errored"]),
                str(r["incomplete"]),
                f"{r['requests_per_s']:.2f}",
                f"{r['output_tokens_per_s']:.1f}",
                f"{r['ttft_ms'].get('p50', 0):.0f} / {r['ttft_ms'].get(q, 0):.0f}",
                f"{r['itl_ms'].get('p50', 0):.1f} / {r['itl_ms'].get(q, 0):.1f}",
                money_cell(r.get("cost_per_million_output_tokens_usd")),
            ]
            for r in (c.report or {}).get("runs", [])
        ]

    def plot_latency(self, ax) -> None:  # type: ignore[no-untyped-def]
        """TTFT at the SLO quantile against output tokens per second per instance, the TTFT SLO dashed."""
        q = self.quantile
        for c in self.measured:
            share = _share(c.report)  # type: ignore[arg-type]
            runs = sorted(
                (r for r in c.report["runs"] if r["successful"]),  # type: ignore[index]
                key=lambda r: r["output_tokens_per_s"],
            )
            ax.plot(
                [r["output_tokens_per_s"] / share for r in runs],
                [r["ttft_ms"].get(q, 0) for r in runs],
                "o-",
                label=c.instance_type,
            )
        if self.slo_ttft_ms:
            ax.axhline(
                self.slo_ttft_ms, color="grey", linestyle="--", label=f"SLO TTFT {q} {self.slo_ttft_ms:g} ms"
            )
        ax.set_xlabel("output tokens/s per instance")
        ax.set_ylabel(f"TTFT {q} (ms)")


def _share(report: dict) -> float:
    """The fraction of one instance a report's copies held (copies / copies per instance; 1 without copies)."""
    copies, per_instance = report.get("copies"), report.get("copies_per_instance")
    return copies / per_instance if copies and per_instance else 1.0
