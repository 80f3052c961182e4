"""`smneuron bench`: load profiles against a SageMaker or local endpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from smneuron.cli._common import (
    JsonOpt,
    console,
    outputs_checked,
    print_json,
    state,
    table,
)
from smneuron.cli.options import with_options
from smneuron.errors import ArtifactError, ConfigError
from smneuron.specs.bench_settings import BENCH


@with_options(BENCH)
def bench_cmd(
    ctx: typer.Context,
    endpoint: str = typer.Argument(
        None, help="SageMaker endpoint name (or --url), or `compare A.json B.json`."
    ),
    reports: list[Path] = typer.Argument(None, help="With `compare`: the two reports."),
    find_max: bool = typer.Option(
        False,
        "--find-max",
        help="Search the highest rate meeting the SLOs (--slo-p99-ms; --slo-ttft/itl-ms): --rate-type find-max.",
    ),
    out: Path = typer.Option(None, "--output", "-o", help="Write the JSON report here."),
    max_error_rate: float = typer.Option(
        0.01, "--max-error-rate", min=0.0, max=1.0, help="Fail (exit 1) above this share of failed requests."
    ),
    as_json: bool = JsonOpt,
    **settings: Any,
) -> None:
    """Benchmark: throughput, latency percentiles, cost; for text generation TTFT, ITL, tokens/s, goodput."""
    from smneuron.artifact.kind import ENCODER, GENERATION, kind_of
    from smneuron.benchmark.profiles import verdict
    from smneuron.benchmark.request import bench
    from smneuron.cli import generation_bench_cmd

    if endpoint == "compare":
        compare = {ENCODER: _compare, GENERATION: generation_bench_cmd.compare}  # each kind's comparison
        return compare[_report_kind(reports[0]) if reports and len(reports) == 2 else ENCODER](
            reports or [], as_json
        )
    if find_max:  # the search is its own profile: bracketing, then bisection on a constant rate
        if settings.get("profile", "find-max") not in ("sweep", "find-max"):
            raise typer.BadParameter(
                f"--find-max searches the rate itself; drop --rate-type {settings['profile']}."
            )
        settings["profile"] = "find-max"
    files = {"--output": out, **{BENCH[k].flag: settings.get(k) for k in ("plot", "csv", "html")}}
    outputs_checked(files, {"--png-dir": settings.get("png_dir")})
    st = state(ctx)
    # flags -> the SDK's one bench request (defaults, kind, refusals and serving figures decided there) -> render;
    # typed before the session is asked for, so that a mistyped flag is said before missing credentials are
    request = BENCH.parse({**settings, "prices": st.project().prices or None}, where="cli")
    result = bench(
        endpoint,
        session=None if settings.get("url") or not endpoint else st.session(),  # no target: the SDK says so
        where="cli",
        request=request,
        on_status=None if as_json else generation_bench_cmd.job_progress(endpoint),
        on_start=None if as_json else lambda said: console().print(f"note: {said}", highlight=False),
    )
    # each kind's report, shown and written (the text-generation one lives with its commands); then the verdict
    emitters = {ENCODER: _emit, GENERATION: generation_bench_cmd.emit}
    if settings.get("in_account"):
        return generation_bench_cmd.emit_in_account(endpoint, result, out=out, as_json=as_json)
    emitters[kind_of(result)](
        result, out=out, csv_out=settings.get("csv"), html_out=settings.get("html"), png_dir=settings.get("png_dir"),
        plot=settings.get("plot"), as_json=as_json,
    )  # fmt: skip
    verdict(result, max_error_rate)


def _emit(report, *, out, plot, as_json, **_) -> None:  # type: ignore[no-untyped-def]
    """An encoder's report: shown first, so that a file that cannot be written after all (a full disk) loses nothing."""
    from smneuron.files.user import write_text

    if as_json:
        print_json(__import__("json").loads(report.to_json()))
    else:
        render(report)
    if out:
        write_text(out, report.to_json())
    if plot:
        report.plot(plot)


def _compare(paths: list[Path], as_json: bool) -> None:

    from smneuron.benchmark.report import compare, load

    if len(paths) != 2:
        raise ConfigError("`smneuron bench compare` takes two report files.")
    a, b = load(paths[0]), load(paths[1])
    rows = compare(a, b)
    if as_json:
        print_json({"a": str(paths[0]), "b": str(paths[1]), "runs": rows})
        return

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.1f}" if x >= 10 else f"{x:.2f}"

    def cell(v):  # type: ignore[no-untyped-def]
        va, vb, ratio = v
        return f"{fmt(va)} -> {fmt(vb)}" + (f" ({ratio:.2f}x)" if ratio else "")

    table(
        f"A = {paths[0]} ({a.get('instance_type')}), B = {paths[1]} ({b.get('instance_type')})",
        ["run", "profile", "req/s A -> B", "p50 ms", "p99 ms", "$ / 1M"],
        [
            [
                r["run"],
                r["profile"],
                cell(r["throughput_rps"]),
                cell(r["p50_ms"]),
                cell(r["p99_ms"]),
                cell(r["cost_per_million_usd"]),
            ]
            for r in rows
        ],
    )


def recommend_cmd(
    ctx: typer.Context,
    reports: list[Path] = typer.Argument(..., help="Bench reports (one per instance type)."),
    latency_p99_ms: float = typer.Option(None, "--slo-p99-ms", help="The p99 latency SLO (ms)."),
    slo_ttft_ms: float = typer.Option(None, "--slo-ttft-ms", help="Text generation: TTFT p95 SLO (ms)."),
    slo_itl_ms: float = typer.Option(None, "--slo-itl-ms", help="Text generation: ITL p95 SLO (ms)."),
    rate: float = typer.Option(
        ..., "--target-rps", help="Requests per second to serve: sizes the fleet (as `compare --target-rps`)."
    ),
    headroom: float = typer.Option(
        1.0, "--headroom", help="Use only this fraction of the measured capacity."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """The cheapest instance type and count meeting a p99 SLO at a rate, with the arithmetic."""
    from smneuron.artifact.kind import ENCODER, GENERATION
    from smneuron.cli import generation_bench_cmd

    # each kind's recommendation: an encoder's under a p99 SLO, text generation's under TTFT / ITL
    recommenders = {ENCODER: _recommend, GENERATION: generation_bench_cmd.recommend}
    kind = _report_kind(reports[0]) if reports else ENCODER
    recommenders[kind](reports, rate=rate, latency_p99_ms=latency_p99_ms, ttft_ms=slo_ttft_ms, itl_ms=slo_itl_ms,
                       headroom=headroom, prices=state(ctx).project().prices, as_json=as_json)  # fmt: skip


def _recommend(reports, *, rate, latency_p99_ms, headroom, prices, as_json, **_) -> None:  # type: ignore[no-untyped-def]
    """An encoder's recommendation: the cheapest type and count whose runs meet the p99 SLO at the rate."""
    from smneuron.benchmark.report import load, recommend

    if latency_p99_ms is None:
        raise ConfigError("Give the latency SLO: --slo-p99-ms MS.")
    options = recommend([load(p) for p in reports], latency_p99_ms, rate, prices=prices, headroom=headroom)
    if as_json:
        print_json([o.__dict__ for o in options])
        return
    if not options:
        raise ConfigError(
            f"No report has a run with p99 <= {latency_p99_ms} ms.",
            hint="Benchmark lower rates or bigger instances, or relax the SLO.",
        )
    best = options[0]
    console().print(
        f"[bold]Cheapest:[/bold] {best.instances} x {best.instance_type}"
        + (f" = ${best.cost_per_hour:.2f}/hour" if best.cost_per_hour else ""),
        markup=True,
    )
    for o in options:
        console().print(f"  {o.instance_type}: {o.arithmetic}")


def render(report) -> None:  # type: ignore[no-untyped-def]
    table(
        f"{report.target} ({report.payloads} distinct payloads)",
        [
            "profile",
            "rate",
            "conc",
            "in flight",
            "ok",
            "failed",
            "req/s",
            "p50 ms",
            "p90 ms",
            "p95 ms",
            "p99 ms",
            "max ms",
            "$ / 1M",
        ],
        [
            [
                r.profile,
                f"{r.rate:.1f}" if r.rate else "-",
                r.concurrency or "-",
                f"{r.in_flight:.1f}" if r.in_flight is not None else "-",
                r.requests_ok,
                r.requests_failed,
                f"{r.throughput_rps:.1f}",
                *[f"{r.latency_ms[k]:.1f}" for k in ("p50", "p90", "p95", "p99", "max")],
                f"{r.cost_per_million_usd:.2f}" if r.cost_per_million_usd else "-",
            ]
            for r in report.runs
        ],
    )
    g = report.generator
    console().print(
        f"generator alone: {g['max_rps']:.0f} req/s ({g['us_per_request']:.1f} us per request); "
        "latency quantiles: numpy linear interpolation over measured requests",
        style="dim",
    )
    for note in report.notes:
        console().print(note, style="yellow")
    if report.errors:  # what the failed requests got (the verdict's hint points here)
        said = "; ".join(f"{what} (x{n})" for what, n in report.errors.items())
        console().print(f"errors: {said}", style="red")


def _report_kind(path: Path) -> Any:
    """What a report file measured (an encoder unless it says otherwise); an unreadable file is the report loader's
    to explain."""
    from smneuron.artifact.kind import ENCODER, kind_of_path

    try:
        return kind_of_path(path) or ENCODER
    except ArtifactError:
        return ENCODER
