"""Text generation in the CLI: compile rendering, the inference-component plan, streamed answers."""

from __future__ import annotations

import time

import typer

from smneuron.cli._common import console, plan_heading, print_json, shown, table
from smneuron.errors import UsageError


def render_text_generation(result, *, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    """What `smneuron compile` prints for a causal LM: the export command, the compiled configuration."""
    notes = result.notes
    m = result.manifest
    if as_json:
        print_json(
            {
                "out_dir": str(result.out_dir),
                "seconds": round(result.seconds, 3),
                "command": result.command,
                "notes": notes,
                "manifest": m.model_dump(mode="json"),
            }
        )
        return
    for n in notes:
        console().print(f"note: {n}")
    g = m.generation
    console().print(
        f"[bold]text-generation[/bold] for [bold]{shown(m.compiler.target)}[/bold] -> {shown(result.out_dir)} "
        f"({result.seconds:.2f} s): {_count(g.num_parameters)} parameters, batch {g.batch_size}, "
        f"sequence {g.sequence_length}, tp {g.tensor_parallel_size}, {g.dtype}",
        markup=True,
    )
    if result.command:
        console().print("optimum-cli " + " ".join(result.command[3:]), style="dim")


def _count(n: int) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.2f}M"


def render_generation_plan(p, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    """The text-generation deploy plan: resources, capacity arithmetic, environment (token redacted), cost."""
    from smneuron.endpoints.naming import redacted

    if as_json:
        print_json(p.to_dict())
        return
    c = console()
    plan_heading(
        f"text-generation endpoint [bold]{shown(p.endpoint_name)}[/bold] on {p.instance.name}: {p.copies} copies "
        f"x tp {p.capacity.tensor_parallel_size}",
        p.notes,
    )
    table(None, ["resource", "name / value"], _plan_rows(p), numeric=False)
    c.print("[bold]Capacity[/bold] (fits):", markup=True)
    for line in p.capacity.lines():
        c.print(f"  {line}", highlight=False)
    table(
        "Container environment",
        ["variable", "value"],
        [[k, v] for k, v in sorted(redacted(p.environment).items())],
        numeric=False,
    )
    for i, x in enumerate(p.pools[1:], 2):  # the other pools: their own Model, image and arithmetic
        c.print(
            f"[bold]Instance pool {i}[/bold]: {x.instance.name} ({x.model_data.target} artifact), Model "
            f"{shown(x.model_name)} ({x.container}: {shown(x.image_uri)}); per copy "
            + (f"{x.accelerators_per_copy} accelerator(s)" if x.accelerated else "2 vCPUs")
            + f", {x.memory_mb_per_copy} MB; "
            + shown(", ".join(f"{k}={v}" for k, v in sorted(redacted(x.environment).items()))),
            markup=True,
        )
        for line in x.capacity.lines():
            c.print(f"  {line}", highlight=False)
    if p.hourly_usd is not None:
        per_copy = p.hourly_usd / max(p.capacity.copies, 1)
        c.print(
            f"Cost: ${p.hourly_usd:.3f}/hour per instance, ${per_copy:.3f}/hour per copy "
            f"({p.capacity.copies} copies fit one instance)."
        )


def _plan_rows(p) -> list[list[str]]:  # type: ignore[no-untyped-def]
    """The plan's resources, one row each, with what each is made of."""
    pools = "; instance pools " + ", ".join(f"{i}: {x.instance.name}" for i, x in enumerate(p.pools, 1))
    yours = ", ".join(f"{k}={v}" for k, v in p.tags.items() if not k.startswith("smneuron:"))
    per_copy = (
        f"{p.accelerators_per_copy} {'GPU(s)' if p.instance.family == 'gpu' else 'accelerator(s)'}"
        if p.accelerated
        else "2 vCPUs"
    )
    caching = (
        "on (scale-out copies start from the instance's cache; --no-data-caching)"
        if p.data_caching
        else "off"
    )
    alarms = ", ".join(a["AlarmName"] for a in p.alarms)
    return [
        [f"Model ({p.container})", p.model_name],
        ["  image", p.image_uri],
        ["  model data", f"{p.model_data.source} (uncompressed S3 prefix, sha256 {p.model_data.sha256[:12]})"],
        ["EndpointConfig", p.endpoint_config_name],
        ["  instances", f"1-{p.max_instances} x {p.instance.name} (managed instance scaling)" + (pools if p.pools else "")],
        ["  volume / AMI", f"{p.volume_size_in_gb} GB / " + (p.inference_ami_version or "- (SageMaker's default host)")],
        ["Endpoint", p.endpoint_name],
        *[[f"  {k}", v] for k, v in p.controls.rows()],
        *([["  your tags", yours]] if yours else []),
        ["InferenceComponent", p.component_name],
        ["  per copy", f"{per_copy}, {p.memory_mb_per_copy} MB host memory"],
        ["  startup / download timeout", f"{p.startup_timeout} s / {p.download_timeout} s"],
        ["  data caching", caching],
        ["  redeploy", f"rolling: {' + '.join(map(str, p.batches))} copies, {p.rolling_wait_s} s bake after each, "
                       f"rolled back by {alarms}"],
        ["  placement / scale-in", f"{p.placement} (copies over instances) / {p.scale_in} (ScaleInPolicy)"],
        ["Copy autoscaling", _copy_scaling(p)],
    ]  # fmt: skip


def _copy_scaling(p) -> str:  # type: ignore[no-untyped-def]
    if p.min_copies == p.max_copies:
        return f"{p.copies} copies (fixed)"
    return (
        f"copies {p.min_copies}-{p.max_copies}, target {p.concurrent_requests_per_copy:g} concurrent requests per copy"
        + (" (scale to zero)" if p.scale_to_zero else "")
    )


def print_stream(pieces, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    """Print text pieces as they arrive (or, with --json, collect them)."""

    start, first, text = time.perf_counter(), None, []
    for piece in pieces:
        if first is None:
            first = time.perf_counter() - start
        text.append(piece)
        if not as_json:
            typer.echo(piece, nl=False)
    total = time.perf_counter() - start
    if as_json:
        print_json(
            {
                "text": "".join(text),
                "pieces": len(text),
                "ttft_s": round(first, 4) if first is not None else None,
                "total_s": round(total, 4),
            }
        )
    else:
        typer.echo("")
        console().print(
            f"{len(text)} pieces; first after {first or 0:.3f} s; {total:.3f} s in all",
            style="dim",
        )


def env_pairs(env: list[str] | None) -> dict[str, str] | None:
    """``--env KEY=VALUE`` flags (None: no flags); the request resolver puts them over the project's."""
    if not env:
        return None
    out = {}
    for item in env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(
                f"{item!r} is not KEY=VALUE (e.g. --env MAX_BATCH_SIZE=8).", param_hint="--env"
            )
        out[key] = value
    return out


def generate(  # type: ignore[no-untyped-def]
    ep,
    text: str,
    *,
    stream: bool,
    max_tokens: int,
    prompt: bool,
    as_json: bool,
    seed: int | None = None,
    temperature: float | None = None,
) -> None:

    if not text:
        raise UsageError(
            "Nothing to send.", hint='Pass the text: `smneuron invoke --stream NAME "Tell me a story"`.'
        )
    args: dict = {"prompt": text} if prompt else {"messages": [{"role": "user", "content": text}]}
    # sampling as the server does it, unless given: a seed makes an answer reproducible
    args.update({k: v for k, v in (("seed", seed), ("temperature", temperature)) if v is not None})
    if stream:
        return print_stream(ep.stream(**args, max_tokens=max_tokens), as_json)
    print_json(ep.generate(**args, max_tokens=max_tokens))
