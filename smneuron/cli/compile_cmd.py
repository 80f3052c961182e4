"""`smneuron compile`: a Hugging Face model directory -> a compiled artifact directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from smneuron.cli._common import JsonOpt, console, print_json, shown, state, table
from smneuron.cli.options import with_options
from smneuron.errors import UsageError
from smneuron.specs.compile_settings import COMPILE


@with_options(COMPILE)
def compile_cmd(
    ctx: typer.Context,
    model_dir: Path = typer.Argument(None, help="HF model directory (default: `model` in smneuron.yaml)."),
    out: Path = typer.Option(None, "--output", "-o", help="Artifact directory to write."),
    from_cache: bool = typer.Option(
        False, "--from-cache", help="text-generation: MODEL is a hub id in the optimum-neuron cache."
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Always recompile."),
    cache_dir: Path = typer.Option(None, "--cache-dir", help="Compile cache location."),
    data: Path = typer.Option(
        None,
        "--data",
        help="Your texts (JSON Lines, as bench takes them): encoder buckets placed on their lengths.",
    ),
    jobs: int = typer.Option(None, "--jobs", "-j", help="Buckets compiled in parallel processes."),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Say what would be compiled (shapes, graphs, defaults and why); compile nothing.",
    ),
    as_json: bool = JsonOpt,
    **settings: Any,
) -> None:
    """Compile a model: one traced file per (batch size, sequence bucket), tokenizer, manifest; cached.

    With no shape flags, an encoder gets batch sizes from its size class (with batch 1 beside them) and buckets 32,
    64 and 128 tokens up to the model's positions; `compile` says what it chose and why (--dry-run shows it first).
    """
    from smneuron.artifact.kind import ENCODER, GENERATION, kind_of
    from smneuron.cli.generation_cmds import render_text_generation
    from smneuron.compilation import compile_model
    from smneuron.specs.compile_settings import compile_spec

    project = state(ctx).project()
    model_dir = model_dir or (Path(project.model) if project.model else None)
    if model_dir is None:
        raise UsageError("No model directory given.", hint="Pass MODEL_DIR or set `model:` in smneuron.yaml.")
    spec = compile_spec(project.compile, settings, where="cli")
    if out is None and not dry_run:
        raise UsageError(
            "compile needs the artifact directory to write.",
            hint="Add -o DIR (or --dry-run to see the plan).",
        )
    result = compile_model(
        model_dir,
        out,
        spec,
        from_cache=from_cache,
        cache=not no_cache,
        cache_dir=cache_dir,
        jobs=jobs,
        data=data,
        dry_run=dry_run,
    )
    if dry_run:
        _render_plan(result, as_json=as_json)
        return
    # each kind's rendering (the text-generation table lives with its commands)
    renderers = {ENCODER: _render_encoder, GENERATION: render_text_generation}
    renderers[kind_of(result.manifest)](result, as_json=as_json)


def _render_encoder(result: Any, *, as_json: bool) -> None:
    """An encoder's compile: its buckets (file, size, compile time, validation against the eager model)."""
    m = result.manifest
    if as_json:
        print_json(
            {
                "out_dir": str(result.out_dir),
                "cache_hit": result.cache_hit,
                "seconds": round(result.seconds, 3),
                "notes": result.notes,
                "manifest": m.model_dump(mode="json"),
            }
        )
        return
    source = "cache hit" if result.cache_hit else "compiled"
    for note in result.notes:
        console().print(f"note: {note}")
    console().print(
        f"[bold]{shown(m.task)}[/bold] for [bold]{shown(m.compiler.target)}[/bold] -> {shown(result.out_dir)} "
        f"({shown(source)}, {result.seconds:.2f} s)",
        markup=True,
    )
    table(
        None,
        ["batch", "seq", "file", "MiB", "compile s", "max |diff|", "cosine min", "on Neuron"],
        [
            [
                b.batch_size,
                b.seq_len,
                b.file,
                f"{b.size_bytes / 2**20:.1f}",
                f"{b.compile_seconds:.2f}",
                f"{b.validation.max_abs_diff:.2e}",
                f"{b.validation.cosine_min:.6f}",
                f"{b.neuron_ops_percent:.1f}%" if b.neuron_ops_percent is not None else "-",
            ]
            for b in m.buckets
        ],
    )
    console().print(
        f"batch {m.batch_size} (partial batches on the smaller ones); inputs {', '.join(m.input_names)}; compiler "
        f"{m.compiler.function} {' '.join(m.compiler.args)}",
        style="dim",
    )


def _render_plan(plan: Any, *, as_json: bool) -> None:
    """A dry run: the settings as resolved, the graphs, and what smneuron decided (with why)."""
    spec = plan.spec
    if as_json:
        print_json(
            {
                "kind": plan.kind,
                "shape": plan.shape,
                "graphs": plan.graphs,
                "notes": plan.notes,
                "spec": spec.model_dump(mode="json"),
            }
        )
        return
    for note in plan.notes:
        console().print(f"note: {note}")
    console().print(
        f"would compile {spec.task} for {spec.target}: {plan.shape}; {plan.graphs} graph(s). Nothing compiled."
    )
