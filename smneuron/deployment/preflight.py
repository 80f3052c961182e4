"""Preflight: before anything is created, the artifact's compiler against the image that would serve it.

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


def image_of(uri: str) -> tuple[str, str]:
    """(repository, tag) of an image URI."""
    name, _, tag = uri.rsplit("/", 1)[-1].partition(":")
    return name, tag


def check(data: ModelData, image_uri: str) -> list[str]:
    """What the plan should say about serving ``data`` with ``image_uri``; raises for a known-bad pair.

    Returns:
        Notes: "will load" with the versions compared, or what is unknown.

    Raises:
        ConfigError: the artifact was compiled by a newer compiler or framework than the image ships.
    """
    if data.target not in PACKAGES:
        return []
    repository, tag = image_of(image_uri)
    row = matrix.row_for(repository, tag)
    if row is None:
        return [
            f"{repository}:{tag} is not in the compatibility matrix: whether its Neuron runtime loads this "
            "artifact is unknown (`smneuron images --matrix` lists the images that are described)"
        ]
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
    notes.append("the host's Neuron driver is not published for any InferenceAmiVersion: not checked")
    return notes
