"""`smneuron tune`: a grid of batch sizes x buckets measured on the target; the pick compiled, the curve reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from smneuron.cli._common import JsonOpt, console, print_json, shown, table
from smneuron.cli.options import with_options
from smneuron.specs.tune_settings import TUNE


@with_options(TUNE)
def tune_cmd(
    model_dir: Path = typer.Argument(..., help="HF model directory (an encoder)."),
    out: Path = typer.Option(..., "--output", "-o", help="Artifact directory to write the pick to."),
    report: Path = typer.Option(None, "--report", help="Write the measured grid as JSON."),
    html_out: Path = typer.Option(
        None, "--html", help="Write the measured grid as an HTML page (table and plot)."
    ),
    as_json: bool = JsonOpt,
    **settings: Any,
) -> None:
    """Measure batch sizes x buckets on the target and compile the fastest layout that meets the SLO.

    Each candidate is compiled (cached), served on this machine as the instance type and measured with the bench's
    throughput profile, under load and alone; the pick is compiled into -o with the curve in its manifest.
    """
    from smneuron.hardware.tuning import tune
    from smneuron.hardware.tuning_report import html_page

    given = TUNE.parse(settings, where="cli").given()
    if "bucket_sets" in given:
        given["bucket_sets"] = [_buckets(s) for s in given["bucket_sets"]]
    result = tune(model_dir, out, **given)
    if report:
        report.write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    if html_out:
        html_out.write_text(html_page(result))
    if as_json:
        print_json(result.to_dict())
        return
    _render(result)


def _buckets(text: str) -> list[int]:
    from smneuron.errors import UsageError
    from smneuron.specs.models import BUCKET_LENGTHS

    try:
        lengths = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise UsageError(
            f"--bucket-set {text!r} is not a list of token lengths.", hint="e.g. --bucket-set 32,64,128"
        ) from None
    least, most = BUCKET_LENGTHS
    if not lengths or not all(least <= n <= most for n in lengths):
        raise UsageError(
            f"--bucket-set {text!r}: each bucket is a token length from {least} to {most}.",
            hint="e.g. --bucket-set 32,64,128",
        )
    return lengths


def _render(result: Any) -> None:
    from smneuron.hardware.tuning_report import rows

    for note in result.notes[:-1]:
        console().print(f"note: {note}")
    console().print(
        f"[bold]{len(result.candidates)} layouts[/bold] on {shown(result.target)}, served as {shown(result.instance)}, "
        f"concurrency {result.concurrency}:",
        markup=True,
    )
    headers, body = rows(result)
    table(None, headers, body)
    c = result.picked
    console().print(
        f"pick: batch {c.batch_size}, buckets {','.join(map(str, c.buckets))}: {result.criterion} -> {result.out_dir}"
    )
    console().print(f"note: {result.notes[-1]}")
