"""Preflight: before anything is created, the artifact's compiler against the image that would serve it.

Text generation (the optimum-neuron vLLM container): an export is loaded only by the optimum-neuron and neuronx-cc
versions that made it (optimum-neuron's ``NeuronConfig.from_dict`` raises for any other, and the container then fails
at start), and only for the architectures the container registers; both are refused here with the way forward. The
export's batch, sequence length, tp and dtype are the container's by construction (``SM_ON_*`` are set from them).

The versions come from the artifact (its manifest's ``versions``, carried by ``ModelData``) and from the
compatibility matrix (``catalog.matrix``: what each image ships, with sources). The known-bad combination is refused
with the fix: an artifact compiled with a newer Neuron framework (torch-neuronx / torch-neuron) than the image ships
is refused by the shipped inference code at start (``serving_model.check_runtime``), after SageMaker has spent
minutes creating the endpoint; here it is refused before. A newer compiler than the image's is allowed with a note
(whether the image's runtime reads that compiler's NEFFs is not known here), and so is what cannot be checked (an
image or a version no source describes, the host's Neuron driver).
"""

from __future__ import annotations

import re

from smneuron.artifact.staging import ModelData
from smneuron.catalog import matrix
from smneuron.errors import ConfigError

# per target: (the framework the inference code checks (inference_code/serving_model.py), the compiler)
PACKAGES = {"inf1": ("torch-neuron", "neuron-cc"), "inf2": ("torch-neuronx", "neuronx-cc")}


def _version(text: str) -> tuple[int, ...]:
    """``2.26.6360.0+6f180f47`` -> (2, 26, 6360, 0): the local build suffix does not order releases."""
    return tuple(int(x) for x in re.findall(r"\d+", text.split("+", 1)[0]))


def check(data: ModelData, image_uri: str, inference_ami_version: str | None = None) -> list[str]:
    """What the plan should say about serving ``data`` with ``image_uri``; raises for a known-bad pair.

    Returns:
        Notes: "will load" with the versions compared, or what is unknown.

    Raises:
        ConfigError: the artifact was compiled by a newer compiler or framework than the image ships.
    """
    if data.target not in PACKAGES:
        return _torchscript(data, image_uri) if data.target in ("cpu", "cuda") else []
    repository, tag = matrix.image_of(image_uri)
    row = matrix.row_for(repository, tag)
    if row is None:
        return [
            f"{repository}:{tag} is not in the compatibility matrix: whether its Neuron runtime loads this "
            "artifact is unknown (`smneuron images --matrix` lists the images that are described)"
        ]
    if row.exact_export:
        return [*_generation(data, row), host(row.runtime, inference_ami_version, row.family)]
    shipped = row.packages()
    compiled = data.versions or {}
    notes, compared = [], []
    for dist in PACKAGES[data.target]:
        built, has = compiled.get(dist), shipped.get(dist)
        if built is None or has is None:
            missing = []
            if built is None:
                missing.append("the artifact does not record the version it was compiled with")
            if has is None:
                missing.append(f"{repository}:{tag} does not say which it ships")
            notes.append(f"{dist}: {' and '.join(missing)}: not checked")
            continue
        fix = (
            f"Serve it with an image that ships {dist} {built} or newer (`smneuron images --matrix`; pin it with "
            "endpoint.neuron_sdk or --image-uri), or compile it in the image that serves it"
        )
        if _version(built) > _version(has) and dist == PACKAGES[data.target][0]:
            raise ConfigError(
                f"The artifact was compiled with {dist} {built}, and {repository}:{tag} ships {dist} {has}, which is "
                "older: the inference code refuses such an artifact at start, after the endpoint has been created.",
                hint=fix + ".",
            )
        if _version(built) > _version(has):
            notes.append(
                f"compiled with {dist} {built}, newer than the {has} of {repository}:{tag}: whether its runtime reads "
                f"this compiler's output is not known here. {fix}."
            )
            continue
        compared.append(f"{dist} {built} <= {has}")
    if compared:
        notes.insert(
            0,
            f"{repository}:{tag} passes the runtime's version check for this artifact: "
            + ", ".join(compared)
            + " (versions from the compatibility matrix)",
        )
    notes.append(host(row.runtime, inference_ami_version, row.family))
    return notes


def _torchscript(data: ModelData, image_uri: str) -> list[str]:
    """A cpu or cuda artifact's torch against the image's: a pair measured to load is said, one measured to fail
    refused, any other said as not checked (with how to check it)."""
    repository, tag = matrix.image_of(image_uri)
    traced = (data.versions or {}).get("torch")
    image = (
        tag.split("-", 1)[0]
        if repository == "pytorch-inference" and re.fullmatch(r"\d+\.\d+(\.\d+)?", tag.split("-", 1)[0])
        else None
    )
    if traced is None or image is None:
        what = "the artifact does not record the torch it was traced with" if traced is None else (
            f"{repository}:{tag} does not say which torch it runs")  # fmt: skip
        return [f"torch: {what}: whether it loads the TorchScript is not checked"]
    pair = matrix.torchscript_pair(traced, image)
    if pair is None:
        if matrix.minor(traced) == matrix.minor(image):
            return [f"traced with torch {traced}, the torch of {repository}:{tag}: it loads as it was traced"]
        return [f"traced with torch {traced}; {repository}:{tag} runs torch {image}: whether it loads this TorchScript "
                "is not checked (benchmarks/image_torch_check.py measures a pair)"]  # fmt: skip
    if not pair.loads:
        raise ConfigError(
            f"The artifact was traced with torch {traced}, and {repository}:{tag} runs torch {image}: {pair.evidence} "
            f"({pair.source}, {pair.checked}).",
            hint=f"Compile it where torch {image} is installed, or serve it with an image whose torch is {matrix.minor(traced)} "
            "(--image-uri).",
        )
    return [f"traced with torch {traced}, served by torch {image} ({repository}:{tag}): measured to load and answer the "
            f"same ({pair.source}, {pair.checked})"]  # fmt: skip


def host(row_runtime: str, inference_ami_version: str | None, family: str = "inf2") -> str:
    """Which host the variant gets and what is known of its Neuron driver against the image's runtime, with sources.

    No InferenceAmiVersion (the default): SageMaker's default host, the one AWS and Hugging Face publish these images
    for; its driver is not published, and that is said. A named AMI whose documented driver is at or below a published
    floor of the image's runtime is refused; one where the floor of the image's (newer) runtime is not published is
    allowed with a warning that says so (``catalog.matrix.runtime_driver_issues``).

    Raises:
        ConfigError: the runtime is published as failing on the named AMI's driver.
    """
    said = matrix.describe_host(inference_ami_version, family)
    driver = matrix.host_driver(inference_ami_version)
    if inference_ami_version is None or driver.neuron_driver in ("unknown", "-"):
        return said
    runtime, on = _version(row_runtime)[:2], _version(driver.neuron_driver)
    fix = (
        "Leave --inference-ami-version unset (endpoint.inference_ami_version in smneuron.yaml): SageMaker's default "
        "host is the one these images are published for."
    )
    for issue in matrix.runtime_driver_issues():
        fails = (
            issue.kind == "runtime_needs_driver"
            and runtime == _version(issue.runtime)
            and on <= _version(issue.driver_at_most)
        ) or (
            issue.kind == "driver_needs_runtime"
            and on >= _version(issue.driver_at_least)
            and runtime < _version(issue.runtime)
        )
        if fails:
            raise ConfigError(
                f"The image's Neuron runtime ({row_runtime}) fails on the host you named: {inference_ami_version} has "
                f"Neuron driver {driver.neuron_driver}, and {issue.what} ({issue.source}).",
                hint=fix,
            )
    for issue in matrix.runtime_driver_issues():
        if (
            issue.kind == "runtime_needs_driver"
            and runtime > _version(issue.runtime)
            and on <= _version(issue.driver_at_most)
        ):
            return (
                f"warning: {said}. Runtime {issue.runtime} fails on drivers up to {issue.driver_at_most} "
                f"({issue.source}); whether this image's newer runtime ({row_runtime}) does is not published, so the "
                f"AMI you named is allowed, unchecked. {fix}"
            )
    return f"{said}; the driver the image's runtime ({row_runtime}) needs is not published: not checked"


def _generation(data: ModelData, row: matrix.Row) -> list[str]:
    """The optimum-neuron vLLM container: the same export versions and a registered architecture, or refused."""
    image = f"{row.repository}:{row.tag}"
    notes: list[str] = []
    model_type = (data.generation.shape.get("model_type") if data.generation else None) or None
    if row.architectures and model_type is None:
        notes.append(f"the artifact does not record its model_type: whether {image} serves it is not checked")
    elif row.architectures and model_type not in row.architectures:
        raise ConfigError(
            f"{image} does not serve {model_type} models: its optimum-neuron registers text generation for "
            f"{', '.join(row.architectures)} only, so the endpoint would fail at start on any Neuron instance "
            "(trn1 runs the same container).",
            hint="Serve it on a CPU instance type (`smneuron compile MODEL --target cpu`, then "
            "`--instance ml.c7i.4xlarge` or larger), or pick a model of a listed architecture.",
        )
    if data.generation is not None and data.generation.hub_model_id:
        notes.append(
            f"{data.generation.hub_model_id} is served from the optimum-neuron cache: the container fetches the entry "
            f"its own neuronx-cc made ({row.compiler}), so nothing is recompiled when the entry exists"
        )
        return notes
    shipped, made = row.packages(), data.versions or {}
    same = []
    for dist in ("optimum-neuron", "neuronx-cc"):
        built, has = made.get(dist), shipped.get(dist)
        if built is None or has is None:
            notes.append(
                f"{dist}: "
                + ("the export does not record its version" if built is None else f"{image} does not say")
                + ": not checked"
            )
            continue
        if built != has:
            raise ConfigError(
                f"The export was made with {dist} {built}; {image} runs {dist} {has}, and optimum-neuron loads an "
                "export only with the very versions that made it: the endpoint would fail at start.",
                hint=f"Re-export with optimum-neuron {shipped.get('optimum-neuron', '?')} and neuronx-cc "
                f"{shipped.get('neuronx-cc', '?')} (the container's: compile inside it, as `smneuron pipeline` "
                "does), or serve it with the tag whose versions match (`smneuron images --matrix`; "
                "endpoint.generation.image_version).",
            )
        same.append(f"{dist} {built}")
    g = data.generation
    if len(same) == 2 and g is not None:  # both versions recorded and equal to the container's
        notes.insert(
            0,
            f"will load without compiling: the export's {' and '.join(same)} are {image}'s, and SM_ON_* serve it "
            f"as it was compiled (batch {g.batch_size}, sequence {g.sequence_length}, tp {g.tensor_parallel_size}, "
            f"{g.dtype})",
        )
    return notes
