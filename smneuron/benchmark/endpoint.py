"""Bench a deployed endpoint by name, from a notebook or the CLI: what it serves (encoder or text generation), its
instance type and count are read from SageMaker, so the report's cost column is filled without being told."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from smneuron.artifact.kind import ENCODER, GENERATION, SETTINGS, ModelKind, kind_of
from smneuron.benchmark import encoder, prompts
from smneuron.benchmark.encoder import Report
from smneuron.benchmark.generation import GenerationReport, bench_text_generation
from smneuron.benchmark.generation_metrics import Slo
from smneuron.benchmark.settings import check_numbers, check_profile
from smneuron.endpoints.describing import choose_component, overview, unknown_kind
from smneuron.errors import ConfigError
from smneuron.session import Session

# what a bench needs to know of where the load lands: bench keyword -> overview field
_SERVING = {
    "instance_type": "instance_type",
    "instance_count": "instances",
    "copies": "copies",
    "copies_per_instance": "copies_per_instance",
    "tensor_parallel_size": "tensor_parallel_size",
}


def deployed_on(name: str, *, session: Session, component: str | None = None) -> dict:
    """What a SageMaker endpoint serves and on what (one status read): ``kind``, ``instance_type``,
    ``instance_count``, the inference ``component`` the load goes to (the one named, else the only one; several and
    none named: refused), and for text generation ``copies``, ``copies_per_instance`` and ``tensor_parallel_size``."""
    o = overview(name, session=session, full=False)  # one read of each resource; no autoscaling or alarms
    if o["kind"] is None:
        raise unknown_kind(name, o["kind_evidence"])
    found = {key: o[field_name] for key, field_name in _SERVING.items()}
    found["instance_count"] = found["instance_count"] or 1
    return {"kind": o["kind"], "component": choose_component(name, o["components"], component)[0], **found}


def target_kind(
    endpoint: str | None,
    url: str | None,
    given: dict[str, str],
    *,
    session: Session | None,
    component: str | None = None,
) -> tuple[ModelKind, dict]:
    """What a bench is pointed at, decided once: a SageMaker endpoint says what it serves (one status read, also
    returned); a URL says nothing, so it is text generation when a text-generation bench setting was given (a
    key of ``given``), else an encoder. The other kind's bench settings are then refused by the kind.

    Raises:
        NotFoundError: no such endpoint.
        ConfigError: a setting of the other kind (``ModelKind.refuse_foreign``, scope "bench").
    """
    if endpoint and not url:
        found = deployed_on(endpoint, session=session or Session.from_env(), component=component)
        return kind_of(found), found
    mixed = {k: [n for n in given if n in k.settings] for k in (ENCODER, GENERATION)}
    if all(mixed.values()):
        flags = {k: ", ".join(SETTINGS[n].flag for n in names) for k, names in mixed.items()}
        raise ConfigError(
            f"{url} does not say what it serves, and these settings disagree: {flags[ENCODER]} are for an "
            f"encoder, {flags[GENERATION]} for text generation.",
            hint="Give the settings of the kind the URL serves (text generation: --prompt-tokens/--output-tokens).",
        )
    return (GENERATION if mixed[GENERATION] else ENCODER), {}


def serving_of(found: dict, given: dict) -> tuple[dict, dict]:
    """The serving figures a bench records: what the user gave overrides what the endpoint says.

    Returns:
        (values, source): each figure's value, and where it came from ("given" or "endpoint"); a figure neither
        gave is left out of both (the report then says it is unknown).
    """
    values, source = {}, {}
    for key in _SERVING:
        if given.get(key) is not None:
            values[key], source[key] = given[key], "given"
        elif found.get(key) is not None:
            values[key], source[key] = found[key], "endpoint"
    return values, source


def bench_endpoint(
    name: str | None = None,
    texts: list[str] | None = None,
    *,
    url: str | None = None,
    data: str | Path | None = None,
    tokenizer: str | Path | None = None,
    session: Session | None = None,
    profile: str = "sweep",
    duration_s: float = 10,
    openai: bool = False,
    mean_tokens: int | None = None,
    spread: int | None = None,
    where: str = "sdk",
    outputs: tuple[str, ...] = (),
    **run: Any,
) -> Report | GenerationReport:
    """Benchmark the endpoint ``name`` as it is deployed (or a server's ``url``): the one bench request, which the CLI's
    `smneuron bench` calls too.

    Args:
        name: the SageMaker endpoint; it says what it serves and on what. Or ``url``: a running server, whose kind is
            text generation when a text-generation setting is given (``prompt_tokens``, ``output_tokens``...), else
            an encoder.
        texts: encoder inputs to send (cycled); else ``data`` (a JSONL file) or texts generated from
            ``tokenizer``'s vocabulary (``mean_tokens`` 24 +- ``spread`` 8 tokens). Text generation: ``data`` is a
            prompts dataset; else synthetic prompts (``prompt_tokens`` / ``output_tokens`` in ``run``; 64 / 128).
        profile, duration_s: the load profile and the length of each run.
        openai: encoders: send OpenAI embeddings requests (``{"input": ...}``) instead of ``{"inputs": ...}``.
        where: "cli" or "sdk": how a refused setting is named (``--copies`` or ``copies=``).
        outputs: the caller's kind-specific output settings that were given (the CLI's ``csv``, ``png_dir``): they
            decide a URL's kind and are refused by the other kind, as the run's settings are.
        run: everything else the encoder bench (``smneuron.run_bench``) or the text-generation bench
            (``smneuron.run_generation_bench``) takes; ``instance_type``, ``instance_count`` and, for text
            generation, ``copies``, ``copies_per_instance`` and ``tensor_parallel_size`` default to the endpoint's
            own (what was given overrides; the report's ``serving_source`` says which).

    Returns:
        The report (``Report`` for encoders, ``GenerationReport`` for text generation): a table and a plot in a notebook.

    Raises:
        NotFoundError: no such endpoint.
        ConfigError: no target, a setting of the other kind, a number out of range or a load setting the profile
            does not read (``settings``), no inputs, an unknown profile, a run too short for its warm-up.
        SmneuronError: nothing listens at ``url`` (checked with one connection once the rest was read, before any
            load).
        BenchFailedError: every request failed.
    """
    run = {k: v for k, v in run.items() if v is not None}  # None: not given (the runners' defaults apply)
    check_numbers({**run, "mean_tokens": mean_tokens, "spread": spread}, where=where)
    check_profile(profile, run, where=where)
    given = {k: "flag" for k in (*run, *outputs) if k in SETTINGS}
    given.update(
        {
            k: "flag"
            for k, v in (("openai", openai or None), ("mean_tokens", mean_tokens), ("spread", spread))
            if v
        }
    )
    sess = None if url else (session or Session.from_env())
    kind, found = target_kind(name, url, given, session=sess, component=run.get("component"))  # decided once
    kind.refuse_foreign(given, where=where, scope="bench")
    values, source = serving_of(found, {k: run.pop(k, None) for k in _SERVING})
    if name and not url:  # read once here: the senders neither describe nor list again
        run.setdefault("checked", True)
    target = _Target(
        name, url, sess, data, tokenizer, profile, duration_s, texts, openai, mean_tokens, spread
    )
    return _BENCHES[kind](target, found, values, source, run)


class _Target(NamedTuple):
    """Where a bench's load goes and what it is made of, as resolved by ``bench_endpoint``."""

    name: str | None
    url: str | None
    session: Session | None
    data: str | Path | None
    tokenizer: str | Path | None
    profile: str
    duration_s: float
    texts: list[str] | None
    openai: bool
    mean_tokens: int | None
    spread: int | None


def _bench_generation(t: _Target, found: dict, values: dict, source: dict, run: dict) -> GenerationReport:
    """Text generation's bench: streamed requests, the endpoint's serving figures and where they came from."""
    run.setdefault("serving_source", source)
    run.setdefault("prompt_tokens", None if t.data else 64)
    if found.get("component"):
        run["component"] = found["component"]
    if "concurrency" in run:  # the closed-loop width: the text-generation runner's name for it
        run["max_concurrency"] = run.pop("concurrency")
    targets = [run.pop(k, None) for k in ("slo_ttft_ms", "slo_itl_ms", "slo_latency_ms")]
    if any(x is not None for x in targets) and "slo" not in run:
        run["slo"] = Slo(*targets)
    return bench_text_generation(
        endpoint=t.name, url=t.url, session=t.session, dataset=t.data, tokenizer=t.tokenizer, profile=t.profile,
        duration_s=t.duration_s, **values, **run,
    )  # fmt: skip


def _bench_encoder(t: _Target, found: dict, values: dict, source: dict, run: dict) -> Report:
    """An encoder's bench: texts (given, from a file, or generated from the tokenizer) as InvokeEndpoint requests."""
    for key in ("copies", "copies_per_instance", "tensor_parallel_size"):
        values.pop(key, None)
    run.update(values)
    if t.texts:
        payloads = [json.dumps({"inputs": x}).encode() for x in t.texts]
    else:
        payloads = prompts.load_payloads(
            t.data,
            tokenizer=t.tokenizer,
            mean_tokens=24 if t.mean_tokens is None else t.mean_tokens,
            spread=8 if t.spread is None else t.spread,
        )
    if t.openai:
        payloads = prompts.as_openai_embeddings(payloads, t.name)
    return encoder.run(
        endpoint=t.name, url=t.url, session=t.session, payloads=payloads, profile=t.profile,
        duration_s=t.duration_s, **run,
    )  # fmt: skip


# each kind's bench: this stage's half of the kind strategy
_BENCHES: dict[ModelKind, Callable[..., Any]] = {ENCODER: _bench_encoder, GENERATION: _bench_generation}
