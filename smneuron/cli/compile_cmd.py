"""`smneuron compile`: a Hugging Face model directory -> a compiled artifact directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from smneuron.cli._common import JsonOpt, console, print_json, state, table
from smneuron.errors import ConfigError


def compile_cmd(
    ctx: typer.Context,
    model_dir: Path = typer.Argument(None, help="HF model directory (default: `model` in smneuron.yaml)."),
    out: Path = typer.Option(..., "--output", "-o", help="Artifact directory to write."),
    target: str = typer.Option(None, "--target", help="inf1, inf2, cuda (NVIDIA GPUs) or cpu."),
    task: str = typer.Option(
        None,
        "--task",
        help="text-classification, feature-extraction, token-classification, question-answering or "
        "text-generation (causal LMs: optimum-neuron for inf2).",
    ),
    sequence_length: int = typer.Option(
        None, "--sequence-length", help="text-generation: prompt + output tokens (vLLM max-model-len)."
    ),
    tensor_parallel_size: int = typer.Option(
        None, "--tensor-parallel-size", "--num-cores", help="text-generation: NeuronCores per copy (inf2)."
    ),
    dtype: str = typer.Option(None, "--dtype", help="text-generation: bf16, fp16 or fp32."),
    from_cache: bool = typer.Option(
        False, "--from-cache", help="text-generation: MODEL is a hub id in the optimum-neuron cache."
    ),
    batch_size: int = typer.Option(None, "--batch-size", help="Static batch size."),
    batch_sizes: str = typer.Option(
        None, "--batch-sizes", help="Smaller batch sizes to compile too, e.g. 1,2,4."
    ),
    buckets: str = typer.Option(None, "--buckets", help="Sequence lengths, e.g. 32,64,128."),
    auto_cast: str = typer.Option(None, "--auto-cast", help="none, matmult or all."),
    auto_cast_type: str = typer.Option(None, "--auto-cast-type", help="bf16, fp16 or tf32 (inf2)."),
    optlevel: int = typer.Option(None, "--optlevel", help="1, 2 or 3 (inf2)."),
    fast_math: str = typer.Option(None, "--fast-math", help="inf1 --fast-math values, comma separated."),
    pipeline_cores: int = typer.Option(None, "--neuroncore-pipeline-cores", help="inf1 pipeline mode cores."),
    compiler_arg: list[str] = typer.Option(None, "--compiler-arg", help="Extra compiler argument (repeat)."),
    pooling: str = typer.Option(None, "--pooling", help="feature-extraction: auto, mean, cls or max."),
    normalize: bool = typer.Option(None, "--normalize/--no-normalize", help="feature-extraction default."),
    precision: str = typer.Option(
        None, "--precision", help="cuda target: fp16 (default), bf16 or fp32; checked against the fp32 model."
    ),
    allow_random_weights: bool = typer.Option(
        False,
        "--allow-random-weights",
        help="Compile although the task's head has no trained weights (tests).",
    ),
    max_abs_diff: float = typer.Option(None, "--max-abs-diff", help="Fail above this traced-vs-eager diff."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Always recompile."),
    cache_dir: Path = typer.Option(None, "--cache-dir", help="Compile cache location."),
    jobs: int = typer.Option(None, "--jobs", "-j", help="Buckets compiled in parallel processes."),
    as_json: bool = JsonOpt,
) -> None:
    """Compile a model: one traced file per sequence bucket, tokenizer, manifest; cached."""
    from smneuron.artifact.kind import ENCODER, GENERATION, kind_of
    from smneuron.cli.generation_cmds import render_text_generation
    from smneuron.compilation import compile_model
    from smneuron.specs.models import override

    project = state(ctx).project()
    model_dir = model_dir or (Path(project.model) if project.model else None)
    if model_dir is None:
        raise ConfigError(
            "No model directory given.", hint="Pass MODEL_DIR or set `model:` in smneuron.yaml."
        )
    spec = override(
        project.compile,
        target=target,
        task=task,
        batch_size=batch_size,
        batch_sizes=batch_sizes,
        buckets=buckets,
        auto_cast=auto_cast,
        auto_cast_type=auto_cast_type,
        optlevel=optlevel,
        fast_math=fast_math.split(",") if fast_math else None,
        neuroncore_pipeline_cores=pipeline_cores,
        compiler_args=compiler_arg or None,
        pooling=pooling,
        normalize=normalize,
        allow_random_weights=allow_random_weights or None,
        precision=precision,
        max_abs_diff=max_abs_diff,
        sequence_length=sequence_length,
        tensor_parallel_size=tensor_parallel_size,
        dtype=dtype,
    )

    result = compile_model(
        model_dir, out, spec, from_cache=from_cache, cache=not no_cache, cache_dir=cache_dir, jobs=jobs
    )
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
        f"[bold]{m.task}[/bold] for [bold]{m.compiler.target}[/bold] -> {result.out_dir} "
        f"({source}, {result.seconds:.2f} s)"
    )
    table(
        None,
        ["seq", "file", "MiB", "compile s", "max |diff|", "cosine min", "on Neuron"],
        [
            [
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
        f"[dim]batch {m.batch_size}; inputs {', '.join(m.input_names)}; compiler "
        f"{m.compiler.function} {' '.join(m.compiler.args)}[/dim]"
    )
