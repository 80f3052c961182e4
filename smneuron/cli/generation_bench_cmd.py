"""`smneuron bench` for text generation: streamed load, live progress, reports, compare, recommend."""

from __future__ import annotations

import json
from pathlib import Path

from smneuron.cli._common import console, print_json, table
from smneuron.errors import ConfigError


def emit(report, *, out, csv_out, html_out, png_dir, as_json, **_) -> None:  # type: ignore[no-untyped-def]
    """A text-generation report as asked: the table (or JSON on stdout), then JSON, CSV, HTML and PNG files."""
    from smneuron.benchmark.generation_report import write_csv, write_html, write_pngs
    from smneuron.files.user import write_text

    data = report.to_dict()
    if as_json:  # shown first: a file that cannot be written after all (a full disk) then loses nothing
        print_json(data)
    else:
        render(data)
    if out:
        write_text(out, json.dumps(data, indent=2))
    if csv_out:
        write_csv(data, csv_out)
    if html_out:
        write_html(data, html_out)
    if png_dir:
        write_pngs(data, png_dir)


def job_progress(endpoint: str | None):  # type: ignore[no-untyped-def]
    """``--in-account``'s progress: a line once the job exists (nothing was refused), then its status as it is
    polled."""
    c, said = console(), []

    def progress(status: str, seconds: float) -> None:
        if not said:
            said.append(status)
            c.print(
                f"SageMaker AI benchmark job on {endpoint} (streamed, OpenAI chat completions) ...",
                highlight=False,
            )
        c.print(f"  job {status} after {seconds:.0f} s", highlight=False)

    return progress


def emit_in_account(endpoint: str | None, measured, *, out: Path | None, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    """``--in-account``: a table of what the job and the bench measured (or the JSON), then the file."""
    from smneuron.files.user import write_text

    data = measured.to_dict()
    if as_json:
        print_json(data)
    else:
        _show_in_account(endpoint, measured, console())
    if out:  # after it was shown: a file that cannot be written after all loses nothing
        write_text(out, json.dumps(data, indent=2, default=str))


def _show_in_account(endpoint: str | None, measured, c) -> None:  # type: ignore[no-untyped-def]
    job = measured.job
    table(
        f"{endpoint}: the same profile measured twice",
        ["metric", f"benchmark job {job.job} ({job.measured_by})", "smneuron bench (from this machine)"],
        measured.rows,
    )
    if job.found_in:
        c.print(f"The job's metrics: {job.found_in} ({job.seconds:.0f} s in all).", highlight=False)
    else:
        c.print(
            "The job's output holds no file with the documented metrics (their file layout is not documented); "
            f"it wrote: {', '.join(job.files) or 'nothing'}.",
            highlight=False,
        )


def render(data: dict) -> None:
    from smneuron.benchmark.generation_report import TERMINAL_COLUMNS, run_cells

    table(
        f"{data['target']}: text generation" + (f", through {data['path']}" if data.get("path") else ""),
        list(TERMINAL_COLUMNS),
        [run_cells(r, TERMINAL_COLUMNS) for r in data["runs"]],
    )
    if data.get("best_good_rate"):
        console().print(
            f"Highest rate with goodput >= {data['goodput_target']:.0%}: {data['best_good_rate']:.2f} req/s"
        )
    if data.get("hourly_usd"):
        console().print(
            f"price ${data['hourly_usd']:.3f}/h x {data['instance_count']:g} ({data['price_source']})",
            style="dim",
        )
    console().print("TTFT/ITL/TPOT as GuideLLM defines them; cut = incomplete (stream cut off)", style="dim")


def compare(paths: list[Path], as_json: bool) -> None:
    from smneuron.benchmark.generation_report import compare as compare_reports
    from smneuron.benchmark.generation_report import load

    a, b = load(paths[0]), load(paths[1])
    rows = compare_reports(a, b)
    if as_json:
        print_json({"a": str(paths[0]), "b": str(paths[1]), "runs": rows})
        return

    def cell(v) -> str:  # type: ignore[no-untyped-def]
        va, vb, ratio = v
        f = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
        return f"{f(va)} -> {f(vb)}" + (f" ({ratio:.2f}x)" if ratio else "")

    table(
        f"A = {paths[0]}, B = {paths[1]}",
        ["run", "out tok/s", "req/s", "TTFT p50 ms", "ITL p50 ms", "latency p99 ms", "$ / 1M tok"],
        [
            [
                f"{r['a']} | {r['b']}",
                *[
                    cell(r[k])
                    for k in (
                        "output_tokens_per_s",
                        "requests_per_s",
                        "ttft_p50_ms",
                        "itl_p50_ms",
                        "latency_p99_ms",
                        "cost_per_million_output_tokens_usd",
                    )
                ],
            ]
            for r in rows
        ],
    )


def recommend(
    paths: list[Path],
    *,
    rate: float,
    ttft_ms: float | None,
    itl_ms: float | None,
    prices: dict[str, float],
    as_json: bool,
    **_: object,
) -> None:
    """Text generation's recommendation: the cheapest type and count whose runs meet the TTFT / ITL SLOs at the rate."""
    from smneuron.benchmark.generation_report import load
    from smneuron.benchmark.generation_report import recommend as pick

    if ttft_ms is None and itl_ms is None:
        raise ConfigError("Give the SLOs to meet: --slo-ttft-ms and/or --slo-itl-ms.")
    choices = pick([load(p) for p in paths], rate=rate, ttft_ms=ttft_ms, itl_ms=itl_ms, prices=prices)
    if as_json:
        print_json([c.__dict__ for c in choices])
        return
    if not choices:
        raise ConfigError(
            "No report has a run meeting the SLOs (p95).",
            hint="Benchmark lower rates, more copies or a larger tp, or relax the SLOs.",
        )
    best = choices[0]
    console().print(
        f"[bold]Cheapest:[/bold] {best.instances} x {best.instance_type} (tp {best.tensor_parallel_size or '?'}, "
        f"{best.copies_needed} copies)" + (f" = ${best.hourly_usd:.2f}/hour" if best.hourly_usd else ""),
        markup=True,
    )
    for c in choices:
        console().print(
            f"  {c.instance_type} tp {c.tensor_parallel_size or '?'}: {c.arithmetic}", highlight=False
        )
