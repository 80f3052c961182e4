"""The model kind, decided once: an encoder (TorchScript buckets behind the PyTorch DLC) or text generation
(a causal LM behind the optimum-neuron vLLM DLC). Everything else carries the answer typed.

``kind_of`` reads it from anything that holds it: a typed object with a ``kind`` (plans, reports, ModelData)
or a ``task`` (manifests), or the raw JSON of a manifest or a bench report. ``kind_of_path`` reads an artifact
directory's ``smneuron.json`` or a report file. Both return the kind's strategy object (``ENCODER`` or
``GENERATION``), which compares equal to its name, so a report's ``"kind": "encoder"`` and the strategy agree.

The strategy owns what this layer can know of a kind. Which settings are its own and the refusal of the other kind's
(``kind_settings``: ``owned``, ``refuse_foreign``) are keyed by it beside the verbs' tables they come from, so reading a
kind (``smneuron package``, a manifest) costs no settings table and no pydantic model. Each later stage keeps its own
half of the strategy (the plan, the container environment, the bench load) keyed by this object, never by a flag.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from smneuron.errors import ArtifactError, ConfigError, UsageError

MANIFEST_NAME = "smneuron.json"


class ModelKind(str):
    """A model kind's strategy. ``str`` so that JSON, reports and S3 metadata carry its plain name."""

    title: str  # "encoder" / "text generation": for sentences
    serves_with: str  # one line on how it is served, for refusals
    # answers generation requests (prompts, chat, streams); an encoder answers {"inputs": texts}
    generates: bool
    # packaged as model.tar.gz with code/inference.py (the PyTorch DLC); else the model directory as it is
    ships_code: bool
    # autoscaling moves instances (encoders); else copies of an inference component
    scales_instances: bool
    # the local serving engines that can serve it (`smneuron serve --engine`)
    engines: tuple[str, ...]

    # what an endpoint of this kind does not answer: the request ("texts", "prompts", "chat") -> (refusal, hint), with
    # {name} and {evidence} filled in
    refusals: Mapping[str, tuple[str, str]] = {}

    def refuse_request(self, name: str, asks: str, evidence: str = "") -> None:
        """Refuse a request endpoint ``name`` of this kind does not answer: "texts" (``{"inputs": texts}``: predict),
        "prompts" (generate, stream, max tokens, seed, temperature) or "chat" (SageMaker's /openai/v1), with what
        it answers instead.

        Raises:
            ConfigError: this kind does not answer ``asks``.
        """
        refusal = self.refusals.get(asks)
        if refusal is not None:
            message, hint = refusal
            raise ConfigError(message.format(name=name, evidence=evidence), hint=hint.format(name=name))

    # the fewest a scaling floor may be (instances for an encoder's real-time variant, copies for text generation),
    # and why no fewer: (message, hint) with {label} and {floor}
    fewest: int = 1
    floor_refusal: tuple[str, str] = ("", "")

    def check_floor(
        self, floor: int, label: str, scheduled: Sequence[int] = (), *, asynchronous: bool = False
    ) -> None:
        """Refuse a scaling floor (``--min``, a schedule's minimum) below what this kind can scale to, with AWS's
        reason: one rule for `deploy` and `scale` alike. An asynchronous endpoint's instances scale to zero whatever
        it serves (AWS Developer Guide, "Autoscale an asynchronous endpoint": "with Asynchronous Inference you can also
        scale down your asynchronous endpoints instances to zero").

        Raises:
            UsageError: the floor is below ``fewest``.
        """
        low = min([floor, *scheduled])
        if low < (0 if asynchronous else self.fewest):
            message, hint = self.floor_refusal
            raise UsageError(message.format(label=label, floor=low), hint=hint.format(label=label))

    def holds(self, thing: Any) -> bool:
        """Whether ``thing`` (a manifest, ModelData, plan or report) is of this kind (``kind_of``): a check that an
        input is what a step takes, never a choice of behaviour (that is a table keyed by the kind)."""
        return kind_of(thing) == self

    @property
    def a_title(self) -> str:
        """The title with its article, for sentences: "an encoder", "a text generation"."""
        return f"{'an' if self.title[0] in 'aeiou' else 'a'} {self.title}"


_SEND_TEXTS = 'Send it texts: `smneuron invoke {name} "some text"` (SDK: Endpoint("{name}").predict([...])).'


class Encoder(ModelKind):
    title = "encoder"
    refusals = {
        "prompts": (
            "Endpoint {name} serves an encoder (embeddings or classification), not text generation: streaming, max "
            "tokens, prompts, seed and temperature apply only to text-generation endpoints.",
            _SEND_TEXTS,
        ),
        "chat": (
            "Endpoint {name} serves an encoder ({evidence}): SageMaker's /openai/v1 path is chat completions, which "
            "an encoder does not answer.",
            _SEND_TEXTS,
        ),
    }
    fewest = 1
    # AWS Developer Guide, "Scale an endpoint to zero instances" (endpoint-auto-scaling-zero-instances.html): "An
    # endpoint can scale to and from zero instances only if it hosts inference components."
    floor_refusal = (
        "{label} {floor}: an encoder's real-time endpoint cannot scale to zero instances: SageMaker scales an endpoint "
        "to and from zero only when it hosts inference components (AWS Developer Guide, 'Scale an endpoint to zero "
        "instances').",
        "Give {label} 1 or more, or deploy it as an asynchronous endpoint (--async: requests are queued and its "
        "instances scale to zero); text generation's copies scale to zero (--min-copies 0).",
    )
    serves_with = "by TorchServe workers in the PyTorch DLC"
    ships_code = True
    scales_instances = True
    engines = ("smneuron", "torchserve")


class TextGeneration(ModelKind):
    title = "text generation"
    refusals = {
        "texts": (
            'Endpoint {name} serves text generation, which answers prompts and chat messages, not {{"inputs": texts}}.',
            'Ask it: endpoint.generate(messages=[{{"role": "user", "content": "..."}}]) or endpoint.stream(...) (CLI: '
            '`smneuron invoke {name} "some text"`).',
        ),
    }
    refusals = {
        **refusals,
        "transform": (
            "{name} is a text-generation artifact: smneuron's Batch Transform runs encoders (the PyTorch DLC's "
            "inference.py answers a JSON Lines request one line per line); the vLLM container it would run in takes "
            "no JSON Lines.",
            "Deploy it (`smneuron deploy`) and send the prompts to the endpoint, or transform an encoder artifact.",
        ),
    }
    fewest = 0  # copies scale to zero, and the instances with them (managed instance scaling)
    serves_with = "as inference-component copies of the vLLM container"
    ships_code = False
    scales_instances = False
    engines = ("smneuron",)


ENCODER: ModelKind = Encoder("encoder")
GENERATION: ModelKind = TextGeneration("text-generation")
KINDS = {str(ENCODER): ENCODER, str(GENERATION): GENERATION}
OTHER = {ENCODER: GENERATION, GENERATION: ENCODER}


def kind_of(thing: Any) -> ModelKind:
    """The kind of a plan, report, ModelData, manifest (typed or raw JSON).

    Raises:
        ValueError: ``thing`` says nothing about its kind (a programming error, not a user's).
    """
    get = thing.get if isinstance(thing, dict) else lambda k: getattr(thing, k, None)
    kind = get("kind")
    if kind in KINDS:
        return KINDS[kind]
    task = get("task")
    if task is not None:
        return GENERATION if task == GENERATION else ENCODER
    raise ValueError(f"cannot tell the model kind of {type(thing).__name__}")


# the tag on every resource smneuron creates that records its model kind: what every later verb reads
TAG_KIND = "smneuron:kind"


def endpoint_kind(
    tags: Mapping[str, str], *, components: bool, environment: Mapping[str, str]
) -> tuple[ModelKind | None, str]:
    """What a deployed endpoint serves, decided once, and the evidence: the kind smneuron recorded on it at creation
    (``tags["smneuron:kind"]``); for an endpoint smneuron did not make (or made before it recorded the kind), inference
    components (text generation, as smneuron serves it) or a PyTorch DLC entry point in the Model's environment
    (``SAGEMAKER_PROGRAM``, or smneuron's ``TS_DEFAULT_SERVICE_HANDLER``: an encoder); else None: it cannot tell, and
    the evidence says so."""
    recorded = tags.get(TAG_KIND)
    if recorded in KINDS:
        return KINDS[recorded], "recorded on the endpoint when smneuron created it (tag smneuron:kind)"
    if components:
        return (
            GENERATION,
            "not recorded on the endpoint; it serves through inference components: text generation",
        )
    entry = next((v for v in ("SAGEMAKER_PROGRAM", "TS_DEFAULT_SERVICE_HANDLER") if v in environment), None)
    if entry:
        return ENCODER, (
            f"not recorded on the endpoint; its Model names a PyTorch DLC entry point ({entry}): an encoder"
        )
    return None, (
        "not recorded on the endpoint (smneuron did not create it), and it has neither inference components (text "
        "generation) nor a PyTorch DLC entry point, SAGEMAKER_PROGRAM or TS_DEFAULT_SERVICE_HANDLER (an encoder)"
    )


def model_kind(model: str | Path, task: str | None) -> tuple[ModelKind, str]:
    """What a model (a directory before compilation, or a hub id) compiles to, decided once for compile, compare and
    evaluate: a task says it; without one, config.json's ``architectures`` (a ``*ForCausalLM`` is text generation, and
    the note says it was inferred); else an encoder. Returns (kind, note); the note is "" when nothing was inferred."""
    if task is not None:
        return kind_of({"task": task}), ""
    try:
        config = json.loads((Path(model) / "config.json").read_text())
        archs = [str(a) for a in (config.get("architectures") or [] if isinstance(config, dict) else [])]
    except (OSError, ValueError):
        archs = []
    causal = [a for a in archs if a.endswith("ForCausalLM")]
    if causal:
        return GENERATION, f"task text-generation inferred from config.json architectures: {causal[0]}"
    return ENCODER, ""


def agreed_kind(
    served: ModelKind | None, where: str, task: str | None, model: str | Path | None
) -> ModelKind:
    """The kind of an evaluation or comparison: what the candidate serves (``served``, read from ``where``) when it
    says; else the task's, else the model directory's (``model_kind``), else an encoder. A task or model that says
    the other kind than the candidate serves is refused, naming both.

    Raises:
        ConfigError: they disagree.
    """
    stated, said = None, ""
    if task:
        stated, said = kind_of({"task": task}), f"the task {task}"
    elif model is not None:
        inferred, note = model_kind(model, None)
        stated, said = (inferred, f"the model {model} (a causal LM)") if note else (None, "")
    if served is None:
        return stated if stated is not None else ENCODER
    if stated is not None and stated != served:
        raise ConfigError(
            f"{where} serves {served.a_title} model, but {said} is {stated.title}.",
            hint="Evaluate the endpoint against the model it serves (or drop --task: the endpoint says it).",
        )
    return served


def kind_of_path(path: str | Path) -> ModelKind | None:
    """The kind of an artifact directory (its ``smneuron.json``) or of a bench report file; None when the path
    holds neither (a model directory before compilation, a tarball: packaging refuses text generation).

    Raises:
        ArtifactError: the manifest or report exists but is not JSON.
    """
    path = Path(path)
    source = path / MANIFEST_NAME if path.is_dir() else path
    if not source.is_file() or source.suffix != ".json":
        return None
    try:
        data = json.loads(source.read_text())
    except (OSError, ValueError) as e:
        raise ArtifactError(f"{source} is not readable JSON ({e}).") from None
    try:
        return kind_of(data) if isinstance(data, dict) else None
    except ValueError:
        return None
