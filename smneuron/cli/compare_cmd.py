"""`smneuron compare`: one model on several instance types under the same load, and which to choose."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from smneuron.hardware.report import Comparison

from smneuron.cli._common import (
    JsonOpt,
    console,
    outputs_checked,
    pairs,
    print_json,
    shown,
    state,
    table,
)
from smneuron.cli.options import with_options
from smneuron.errors import UsageError
from smneuron.specs.compare_settings import COMPARE


@with_options(COMPARE)
def compare_cmd(
    ctx: typer.Context,
    model: Path = typer.Argument(None, help="HF model directory (default: `model` in smneuron.yaml)."),
    instances: str = typer.Option(
        ..., "--instances", help="Instance types to compare, e.g. ml.inf2.xlarge,ml.g6.xlarge,ml.c7i.2xlarge."
    ),
    artifact: list[str] = typer.Option(
        None,
        "--artifact",
        help="TARGET=DIR: a compiled artifact to use for a target (e.g. inf2 compiled in its DLC).",
    ),
    out: Path = typer.Option(None, "--output", "-o", help="Write the JSON report here."),
    html_out: Path = typer.Option(None, "--html", help="Write a self-contained HTML report here."),
    plot: Path = typer.Option(None, "--plot", help="Write the plot (PNG) here."),
    as_json: bool = JsonOpt,
    **settings: Any,
) -> None:
    """Compile, deploy and bench MODEL on each instance type, delete them, and recommend one with its arithmetic."""
    from smneuron.hardware.workflow import compare_instances

    st = state(ctx)
    project = st.project()
    model = model or (Path(project.model) if project.model else None)
    artifacts = pairs(artifact, "--artifact", "TARGET=DIR", str)
    if model is None and not artifacts:
        raise UsageError("No model directory given.", hint="Pass MODEL or set `model:` in smneuron.yaml.")
    outputs_checked({"--output": out, "--html": html_out, "--plot": plot})
    # typed here too, so that a mistyped flag is said before missing credentials are (the SDK parses the same table)
    COMPARE.parse(settings, where="cli")
    comparison = compare_instances(
        model,
        instances,
        artifacts=artifacts,
        spec=project.compile,
        session=st.session(),
        where="cli",
        **settings,
    )
    if as_json:  # shown first: a file that cannot be written after all (a full disk) then loses nothing
        print_json(comparison.to_dict())
    else:
        render(comparison)
    if out:
        comparison.write_json(out)
    if html_out:
        comparison.write_html(html_out)
    if plot:
        comparison.plot(plot)
    if comparison.left_behind or not comparison.measured:
        raise typer.Exit(1)


def render(comparison: Comparison) -> None:
    c = console()
    table(
        f"{comparison.model} on {comparison.where}",
        comparison.head(),
        [comparison.cells(r) for r in comparison.rows()],
    )
    for row in comparison.rows():
        if row["reason"]:
            c.print(
                f"[yellow]{row['instance_type']}[/yellow] {shown(row['status'])}: {shown(row['reason'])}",
                markup=True,
            )
    for note in comparison.notes:
        c.print(note, style="dim")
    for line in comparison.price_lines():
        c.print(f"price {line}", style="dim")
    rec = comparison.recommendation()
    if rec:
        c.print(f"\n[bold]Choose {rec['instance_type']}[/bold]: {shown(rec['why'])}", markup=True)
        for line in rec["arithmetic"]:
            c.print(f"  {line}")
    else:
        c.print(
            "\n[bold red]No recommendation[/bold red]: no instance type was measured under the SLO.",
            markup=True,
        )
    if comparison.caveat:
        c.print(f"\n[yellow]Note:[/yellow] {shown(comparison.caveat)}", markup=True)
    for left in comparison.left_behind:
        c.print(f"[red]Left behind[/red]: {shown(left)}", markup=True)
