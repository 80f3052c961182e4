"""`smneuron instances` and `smneuron images`: what the catalog knows."""

from __future__ import annotations

import typer

from smneuron.cli._common import JsonOpt, console, print_json, shown, state, table
from smneuron.errors import MissingRegionError, UsageError


def instances(
    ctx: typer.Context,
    family: str = typer.Option(None, "--family", help="Only inf1, inf2, trn, cpu or gpu."),
    show_all: bool = typer.Option(
        False, "--all", help="Every SageMaker hosting type (default: Inferentia, Trainium and priced types)."
    ),
    cores_per_model: int = typer.Option(
        1, "--cores-per-model", min=1, help="NeuronCores one model copy spans."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """List instance types: NeuronCores, memory, hourly price and recommended workers."""
    from smneuron.catalog import INSTANCE_TYPES, load_prices

    families = sorted({t.family for t in INSTANCE_TYPES.values()})
    if family and family not in families:
        raise UsageError(
            f"Unknown instance family {family!r}.", hint=f"Use --family with one of: {', '.join(families)}."
        )
    prices = load_prices(state(ctx).project().prices or None)
    rows = [
        _instance_row(t, prices, cores_per_model)
        for t in INSTANCE_TYPES.values()
        if (
            t.family == family
            if family
            else show_all or t.is_neuron or t.is_trainium or prices.hourly(t.name) is not None
        )
    ]
    if as_json:
        print_json(
            {
                "instances": rows,
                "prices": {"source": prices.source, "as_of": prices.as_of, "region": prices.region},
            }
        )
        return
    table(
        None,
        ["instance", "NeuronCores", "chips", "vCPU", "host GiB", "accel GiB", "$/hour", "workers", "uses"],
        [_instance_cells(r, prices) for r in rows],
    )
    console().print(
        f"Prices: {prices.source}, {prices.region}, as of {prices.as_of}. "
        "Override with `prices:` in smneuron.yaml or SMNEURON_PRICES_FILE.",
        style="dim",
    )
    if any(r["instance_type"] in prices.estimated for r in rows):
        console().print(f"~ estimate ({prices.estimate_source}): not a SageMaker list price.", style="dim")
    if not (show_all or family):
        console().print("`smneuron instances --all` lists every SageMaker hosting type.", style="dim")


def _instance_row(t, prices, cores_per_model: int) -> dict:  # type: ignore[no-untyped-def]
    """One instance type as `smneuron instances --json` gives it."""
    return {
        "instance_type": t.name,
        "family": t.family,
        "neuron_cores": t.neuron_cores,
        "chips": t.chips,
        "neuron_core_version": t.neuron_core_version or None,
        "vcpus": t.vcpus,
        "memory_gib": t.memory_gib,
        "accelerator_memory_gib": t.accelerator_memory_gib,
        "accelerator": t.accelerator or None,
        "gpus": t.gpus,
        "hourly_usd": prices.hourly(t.name),
        "price_source": prices.source_of(t.name),
        "note": t.note or None,
        "recommended_workers": t.recommended_workers(cores_per_model),
        "uses": list(t.uses),
    }


def _instance_cells(r: dict, prices) -> list:  # type: ignore[no-untyped-def]
    """One row of the table; an estimated price with a ~, an unknown one as ?."""
    hourly = r["hourly_usd"]
    price = (
        "?"
        if hourly is None
        else f"~{hourly:.3f}"
        if r["instance_type"] in prices.estimated
        else f"{hourly:.3f}"
    )
    return [
        r["instance_type"], r["neuron_cores"] or "-", r["chips"] or "-", r["vcpus"], r["memory_gib"],
        r["accelerator_memory_gib"] or "-", price, r["recommended_workers"], ",".join(r["uses"]),
    ]  # fmt: skip


def images(
    ctx: typer.Context,
    instance: str = typer.Option(None, "--instance", "-i", help="Instance type, e.g. ml.inf2.xlarge."),
    region: str = typer.Option(None, "--region", help="AWS region (default: the session's)."),
    torch_version: str = typer.Option(None, "--torch", help="Pin a torch version."),
    neuron_sdk: str = typer.Option(None, "--neuron-sdk", help="Pin a Neuron SDK version."),
    matrix: bool = typer.Option(
        False,
        "--matrix",
        help="The compatibility matrix: every image's Neuron SDK, compiler, runtime, sources.",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Show the DLC image smneuron deploys for an instance type, and the other known tags."""
    from smneuron.catalog import InstanceType, image_versions, resolve_image
    from smneuron.catalog.generation import VLLM_GPU_TAGS, VLLM_TAGS, resolve_vllm_image
    from smneuron.files.local_record import LOCAL_REGION, wants_local
    from smneuron.session import resolve_region

    if matrix:
        return _matrix(as_json)
    if not instance:
        raise typer.BadParameter(
            "give the instance type (or --matrix for every image).", param_hint="--instance"
        )
    st = state(ctx)
    # the embedded SageMaker's region, offline
    if not region and not st.region and (st.local or wants_local()):
        region = LOCAL_REGION
    region = resolve_region(region or st.region or st.project().aws.region)
    if not region:
        raise MissingRegionError()
    inst = InstanceType.parse(instance)
    chosen = resolve_image(inst, region, torch_version=torch_version, neuron_sdk=neuron_sdk)
    family = inst.family if inst.family in ("inf1", "inf2", "gpu") else "cpu"
    known = [
        resolve_image(inst, region, torch_version=v.torch, neuron_sdk=v.neuron_sdk or None)
        for v in image_versions(family)
    ]
    # text generation is served by a vLLM image, not the PyTorch one: optimum-neuron's on inf2, AWS's on a GPU
    llm = (
        [resolve_vllm_image(region, version=t) for t in VLLM_TAGS]
        if inst.family == "inf2"
        else [resolve_vllm_image(region, version=t, target="cuda") for t in VLLM_GPU_TAGS]
        if inst.family == "gpu"
        else []
    )
    if as_json:
        print_json(_images_json(inst, region, chosen, known, llm))
        return
    console().print(chosen.uri, style="bold")
    table(
        f"Known {family} images in {region}",
        ["tag", "torch", "python", "Neuron SDK", "os", ""],
        [
            [
                k.tag,
                k.version.torch,
                k.version.python_version,
                k.version.neuron_sdk or "-",
                k.version.os,
                "selected" if k.uri == chosen.uri else "",
            ]
            for k in known
            if k.version
        ],  # fmt: skip
    )
    if llm:
        which = (
            f"AWS's GPU vLLM image, for cuda artifacts; known tags: {', '.join(VLLM_GPU_TAGS)}"
            if inst.family == "gpu"
            else f"the optimum-neuron vLLM DLC; known tags: {', '.join(VLLM_TAGS)}"
        )
        console().print(
            f"Text generation (causal LMs) on {inst.name}: [bold]{shown(llm[-1].uri)}[/bold] ({shown(which)})",
            markup=True,
        )


def _images_json(inst, region: str, chosen, known: list, llm: list) -> dict:  # type: ignore[no-untyped-def]
    return {
        "instance_type": inst.name,
        "region": region,
        "image_uri": chosen.uri,
        "text_generation_image_uri": llm[-1].uri if llm else None,
        "known": [
            {
                "image_uri": k.uri,
                "torch": k.version.torch,
                "python": k.version.python_version,
                "neuron_sdk": k.version.neuron_sdk or None,
                "os": k.version.os,
                "default": k.uri == chosen.uri,
            }
            for k in known
            if k.version
        ],
    }


def _matrix(as_json: bool) -> None:
    """Every serving image smneuron can choose, with what it holds and where each fact was read."""
    from dataclasses import asdict

    from smneuron.catalog import matrix

    rows, drivers, issues, facts = (
        matrix.rows(),
        matrix.host_drivers(),
        matrix.runtime_driver_issues(),
        matrix.facts(),
    )
    if as_json:
        print_json(
            {
                "images": [asdict(r) for r in rows],
                "host_drivers": [asdict(d) for d in drivers],
                "runtime_driver_issues": [asdict(i) for i in issues],
                "facts": [asdict(f) for f in facts],
            }
        )
        return

    def short(text: str) -> str:  # the package name is in the header; the version is what differs
        return (
            text.removeprefix("aws-neuronx-runtime-lib ")
            .removeprefix("neuronx-cc ")
            .removeprefix("neuron-cc ")
        )

    table(
        "Serving images (smneuron/catalog/data/compatibility.json)",
        ["image", "kind", "Neuron SDK", "compiler", "runtime lib", "torch / py", "status", "src"],
        [
            [f"{r.repository}:{r.tag}", r.kind, r.neuron_sdk, short(r.compiler), short(r.runtime),
             f"{r.torch} / {r.python}", r.status.split(":")[0], i]
            for i, r in enumerate(rows, 1)
        ],
        numeric=False,
    )  # fmt: skip
    table(
        "Hosts (InferenceAmiVersion)",
        ["InferenceAmiVersion", "accelerator", "Neuron driver", "note"],
        [[d.inference_ami_version, d.accelerator, d.neuron_driver, d.note] for d in drivers],
        numeric=False,
    )
    for r in rows:
        if r.architectures:
            console().print(f"{r.repository}:{r.tag} serves: {', '.join(r.architectures)}")
    for i, r in enumerate(rows, 1):
        console().print(f"{i}. {r.source} (checked {r.checked})", style="dim")
    console().print(f"hosts: {drivers[0].source} (checked {drivers[0].checked})", style="dim")
    console().print("Runtime against driver (published):")
    for i in issues:
        console().print(f"- {shown(i.what)} [dim]({shown(i.source)}, checked {i.checked})[/dim]", markup=True)
    console().print("Hosting facts:")
    for f in facts:
        console().print(f"- {shown(f.fact)} [dim]({shown(f.source)}, checked {f.checked})[/dim]", markup=True)
