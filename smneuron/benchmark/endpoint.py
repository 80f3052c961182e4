"""Bench a deployed endpoint by name, from a notebook or the CLI: what it serves (encoder or text generation), its
instance type and count are read from SageMaker, so the report's cost column is filled without being told."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from smneuron.artifact.kind import ENCODER, GENERATION, ModelKind, kind_of
from smneuron.artifact.kind_settings import OWNED, SETTINGS, refuse_foreign
from smneuron.benchmark import encoder, prompts
from smneuron.benchmark.encoder import Report
from smneuron.benchmark.generation import GenerationReport, bench_text_generation
from smneuron.benchmark.generation_metrics import Slo
from smneuron.benchmark.prompts import Lengths, lengths
from smneuron.benchmark.settings import check_profile
from smneuron.endpoints.describing import choose_component, read_endpoint, unknown_kind
from smneuron.endpoints.invoke import server_url
from smneuron.errors import ConfigError, UsageError
from smneuron.session import Session
from smneuron.specs.bench_settings import BENCH, PROMPT_TOKENS, BenchRequest

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
    record = read_endpoint(session, name)  # one read of each resource; no autoscaling or alarms
    record.answers_in_real_time("bench")
    o = record.overview()
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
        ConfigError: a setting of the other kind (``kind_settings.refuse_foreign``, scope "bench").
    """
    if endpoint and not url:
        found = deployed_on(endpoint, session=session or Session.from_env(), component=component)
        return kind_of(found), found
    mixed = {k: [n for n in given if n in OWNED[k]] for k in (ENCODER, GENERATION)}
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


def bench_here(
    name: str | None,
    texts: list[str] | None,
    request: BenchRequest,
    *,
    session: Session | None = None,
    where: str = "sdk",
    on_start: Callable[[str], None] | None = None,
) -> Report | GenerationReport:
    """The bench of ``request`` from this machine (``smneuron.bench`` without ``in_account``): the target says its
    kind (an endpoint by reading it once, a URL by the settings given), which refuses the other kind's settings; the
    endpoint's serving figures fill what was not given.

    Raises:
        NotFoundError: no such endpoint.
        UsageError: no target. ConfigError: a setting of the other kind, a load setting the profile does not read, no
            inputs.
        SmneuronError: nothing listens at the URL. BenchFailedError: every request failed.
    """
    run = request.given()
    url = run.pop("url", None)
    # the server's own URL, however it was given
    url = server_url(url, BENCH["url"].label(where)) if url else None
    if not name and not url:
        raise UsageError(
            "Nothing to bench: no endpoint name and no URL.",
            hint=f"Give the endpoint's name (`smneuron bench NAME`), or {BENCH['url'].label(where)} of a running server.",
        )
    profile = run.pop("profile", BENCH["profile"].default)
    check_profile(profile, run, where=where)
    given = {BENCH[k].name: "flag" for k in run if BENCH[k].name in SETTINGS}
    sess = None if url else (session or Session.from_env())
    kind, found = target_kind(name, url, given, session=sess, component=run.get("component"))  # decided once
    refuse_foreign(kind, given, where=where, scope="bench")
    for keyword in [
        k for k in run if not BENCH[k].sdk
    ]:  # the CLI's outputs: they took part in the kind's check
        run.pop(keyword)
    values, source = serving_of(found, {k: run.pop(k, None) for k in _SERVING})
    if name and not url:  # read once here: the senders neither describe nor list again
        run["checked"] = True
    for keyword in ("prompt_tokens", "output_tokens"):  # N or N,stdev,min,max
        if keyword in run:
            run[keyword] = lengths(run[keyword], BENCH[keyword].label(where))
    _one_prompts_file(run, where)
    load = {
        k: run.pop(k, None) for k in ("data", "tokenizer", "duration_s", "openai", "mean_tokens", "spread")
    }
    target = _Target(name, url, sess, profile, texts, **load)
    return _BENCHES[kind](target, found, values, source, {**run, "on_start": on_start})


def _one_prompts_file(run: dict, where: str) -> None:
    """``dataset`` (text generation's name for its prompts file) as ``data``, the file both kinds read: given alone
    it was passed twice and the bench ended in "Unexpected error: TypeError".

    Raises:
        UsageError: both were given.
    """
    if run.get("dataset") is None:
        run.pop("dataset", None)
        return
    if run.get("data") is not None:
        raise UsageError(
            f"{BENCH['data'].label(where)} and {BENCH['dataset'].label(where)} both name the prompts file.",
            hint=f"Give one of them ({BENCH['dataset'].label(where)} is text generation's name for it).",
        )
    run["data"] = run.pop("dataset")


class _Target(NamedTuple):
    """Where a bench's load goes and what it is made of, as resolved by ``bench_here``."""

    name: str | None
    url: str | None
    session: Session | None
    profile: str
    texts: list[str] | None
    data: str | Path | None
    tokenizer: str | Path | None
    duration_s: float | None
    openai: bool | None
    mean_tokens: int | None
    spread: int | None

    @property
    def duration(self) -> float:
        return BENCH["duration_s"].default if self.duration_s is None else self.duration_s


def _bench_generation(t: _Target, found: dict, values: dict, source: dict, run: dict) -> GenerationReport:
    """Text generation's bench: streamed requests, the endpoint's serving figures and where they came from."""
    run.setdefault("serving_source", source)
    run.setdefault("prompt_tokens", None if t.data else Lengths(PROMPT_TOKENS))
    if found.get("component"):
        run["component"] = found["component"]
    if "concurrency" in run:  # the closed-loop width: the text-generation runner's name for it
        run["max_concurrency"] = run.pop("concurrency")
    targets = [run.pop(k, None) for k in ("slo_ttft_ms", "slo_itl_ms", "slo_latency_ms")]
    if any(x is not None for x in targets) and "slo" not in run:
        run["slo"] = Slo(*targets)
    return bench_text_generation(
        endpoint=t.name, url=t.url, session=t.session, dataset=t.data, tokenizer=t.tokenizer, profile=t.profile,
        duration_s=t.duration, **values, **run,
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
            mean_tokens=BENCH["mean_tokens"].default if t.mean_tokens is None else t.mean_tokens,
            spread=BENCH["spread"].default if t.spread is None else t.spread,
        )
    if t.openai:
        payloads = prompts.as_openai_embeddings(payloads, t.name)
    return encoder.run(
        endpoint=t.name, url=t.url, session=t.session, payloads=payloads, profile=t.profile,
        duration_s=t.duration, **run,
    )  # fmt: skip


# each kind's bench: this stage's half of the kind strategy
_BENCHES: dict[ModelKind, Callable[..., Any]] = {ENCODER: _bench_encoder, GENERATION: _bench_generation}
