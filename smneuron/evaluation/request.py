"""The one evaluate request, which `smneuron evaluate` and notebooks both call: the kind is decided once (an endpoint
says what it serves; otherwise the task, or the model directory), the other kind's gates and candidates are refused by
the kind, the project's gates are overridden by what was given, and the kind's scorer runs."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from smneuron.artifact.kind import ENCODER, GENERATION, ModelKind, agreed_kind
from smneuron.artifact.kind_settings import refuse_foreign
from smneuron.compilation.vocabulary import check_tokenizer
from smneuron.endpoints.describing import choose_component
from smneuron.endpoints.handle import Endpoint
from smneuron.endpoints.invoke import server_url
from smneuron.endpoints.openai_compat import ChatCaller
from smneuron.endpoints.record import EndpointRecord, read_endpoint
from smneuron.errors import ConfigError, InvocationError, UsageError
from smneuron.evaluation.chat import collect_chat
from smneuron.evaluation.encoder import evaluate
from smneuron.evaluation.generation import TOKENIZER_DIR, collect, reference_outputs, score, text_of
from smneuron.evaluation.scoring import Evaluation, read_records
from smneuron.session import Session
from smneuron.specs.evaluate_settings import EVALUATE, GATES
from smneuron.specs.models import CompileSpec, GenerationThresholds, Thresholds
from smneuron.specs.validation import override


@EVALUATE.signature
def evaluate_candidate(
    data: str | Path,
    *,
    thresholds: Thresholds | None = None,
    generation_thresholds: GenerationThresholds | None = None,
    compile_spec: CompileSpec | None = None,
    where: str = "sdk",
    session: Session | None = None,
    **settings: Any,
) -> Evaluation:
    """Score a candidate against its reference and apply the gates (``smneuron.evaluate``, `smneuron evaluate`).

    The candidate is an ``endpoint`` (it says what it serves), a ``url``, or for encoders a ``package`` or the
    ``outputs`` of a Batch Transform; the reference is the uncompiled ``model`` on CPU (or, for encoders, a
    ``reference`` computed before). The kind is decided once (the endpoint's, else ``task``'s, else the model
    directory's), and the other kind's gates and candidates are refused.

    Args:
        data: the evaluation JSONL (``{"inputs": ..., "label": ...}`` per line).
        thresholds, generation_thresholds: the project's gates for each kind (defaults: the specs' own); a gate given
            as a keyword (``min_cosine=0.995``) overrides its project value.
        compile_spec: an encoder reference's shapes (the project's ``compile``).
        where: "cli" or "sdk": how a refused setting is named (``--min-cosine`` or ``min_cosine=``).

    Returns:
        The ``Evaluation``: metrics, gates, ``passed`` and a summary that says what could not be compared.

    Raises:
        ConfigError: an unknown setting; a gate or candidate of the other kind; an endpoint and a model of different
            kinds; a missing candidate or reference. UsageError: a gate out of range.
        NotFoundError: no such endpoint. EvaluationError, InvocationError: as the kind's scorer raises them.
    """
    asked = EVALUATE.parse(settings, where=where).given()
    if asked.get("url"):  # the server's own URL, however it was given (``server_url``)
        asked["url"] = server_url(asked["url"], EVALUATE["url"].label(where))
    model, endpoint, url = asked.get("model"), asked.get("endpoint"), asked.get("url")
    if model is not None:  # before any read or reference minute: a typo is not a hub id to download
        _check_model_dir(Path(model))
    read_records(data)  # the data's mistakes (missing, not JSON, no records) before any AWS read
    # what belongs to one kind: the gates and candidates given (the default path, invoke, belongs to both)
    given = {
        EVALUATE[k].name: "flag" for k, v in asked.items() if EVALUATE[k].kind and (k, v) != ("via", "invoke")
    }
    sess = session or (Session.from_env() if endpoint and not url else None)
    # the endpoint read once (kind, components, the served model), and that record handed on
    described = read_endpoint(sess, endpoint) if endpoint and not url else None
    if described is not None:
        described.answers_in_real_time("evaluate")
    # decided once: what the endpoint serves, else the task, else the model directory (artifact.kind.agreed_kind)
    kind = agreed_kind(
        described.served_kind() if described else None, f"Endpoint {endpoint}", asked.get("task"), model
    )
    refuse_foreign(kind, given, where=where, scope="evaluate")
    gates = {k: asked.pop(k) for k in GATES if k in asked}
    return _SCORERS[kind](
        data=data, model=model, endpoint=endpoint, url=url, compile_spec=compile_spec, session=sess,
        described=described, gates=gates, thresholds=thresholds, generation_thresholds=generation_thresholds,
        **{k: asked.get(k) for k in ("reference", "package", "outputs", "component", "task")},
        via=asked.get("via", EVALUATE["via"].default),
    )  # fmt: skip


def _score_encoder(*, data: Any, thresholds: Any, gates: dict, model: Any, **asked: Any) -> Evaluation:
    """An encoder's evaluation: the scorer of ``evaluation.scoring`` with the project's gates overridden."""
    return evaluate(
        data,
        task=asked["task"],
        thresholds=override(thresholds or Thresholds(), **gates),
        reference_model=model,
        reference=asked["reference"],
        compile_spec=asked["compile_spec"],
        package=asked["package"],
        endpoint=asked["endpoint"],
        url=asked["url"],
        outputs=asked["outputs"],
        session=asked["session"],
    )


def _score_generation(
    *, data: Any, generation_thresholds: Any, gates: dict, model: Any, endpoint: Any, url: Any, **asked: Any
) -> Evaluation:
    """Text generation's evaluation: the served model against its fp32 reference on CPU (``evaluate_generation``).

    Raises:
        UsageError: no uncompiled model or no candidate.
    """
    if model is None or not (endpoint or url):
        raise UsageError(
            "A text-generation evaluation needs the uncompiled model (--model DIR, its fp32 reference on CPU) and "
            "the candidate (--endpoint NAME or --url URL).",
            hint="Give both; e.g. `smneuron evaluate prompts.jsonl --model ./model --endpoint NAME`.",
        )
    return evaluate_generation(
        data,
        model=model,
        thresholds=override(generation_thresholds or GenerationThresholds(), **gates),
        endpoint=endpoint,
        url=url,
        component=asked["component"],
        via=asked["via"],
        session=asked["session"],
        described=asked["described"],
    )


def evaluate_generation(
    data: str | Path,
    *,
    model: str | Path,
    thresholds: GenerationThresholds | None = None,
    endpoint: str | None = None,
    url: str | None = None,
    component: str | None = None,
    via: str = EVALUATE["via"].default,
    session: Any = None,
    described: EndpointRecord | None = None,
) -> Evaluation:
    """Score a served causal LM against its fp32 reference on CPU (``smneuron evaluate`` for text generation): the
    pipeline's CheckAgreement, run by hand.

    Args:
        data: JSONL of prompts (``{"inputs": "..."}``, with ``"label"``: the expected answer, for the task score).
        model: the uncompiled model directory (the reference runs it on CPU in fp32).
        thresholds: the gates (default ``GenerationThresholds()``).
        endpoint: the candidate as a SageMaker endpoint; or ``url``: a running local server (``smneuron serve``).
        component: the endpoint's inference component (None: its only one; several and none named: refused).
        via: the endpoint's path: "invoke" (InvokeEndpoint: raw-prompt completions, echo, teacher forcing) or
            "openai" (/openai/v1 with a bearer token: chat completions, ``evaluation.chat``).
        described: the endpoint's record when the caller read it (it is not read again).

    Raises:
        ConfigError: unreadable data; EvaluationError: the candidate refused a plain completion, or a task floor
            without labels; InvocationError: the endpoint failed.
    """
    t = thresholds or GenerationThresholds()
    records = read_records(data)
    if via == "openai":
        if url or not endpoint:
            raise ConfigError(
                "--via openai is an endpoint's path (SageMaker's /openai/v1); a --url's server is evaluated through its own "
                "/invocations.",
                hint="Give --endpoint NAME, or drop --via.",
            )
        # one read of the endpoint (an encoder or a missing component is refused) before the reference's minutes
        with (
            ChatCaller(
                endpoint, component, session=session or Session.from_env(), described=described
            ) as call,
            tempfile.TemporaryDirectory(prefix="smneuron-evaluate-") as work,
        ):
            reference = reference_outputs(model, records, t.max_new_tokens, work, chat=True)
            candidate = collect_chat(call, records, reference, t.max_new_tokens, t.top_logprobs, text_of)
            return score(reference, candidate, records, t, Path(work) / TOKENIZER_DIR)
    target = Endpoint(endpoint, url=url, session=session)
    if endpoint:  # a missing endpoint is said before the reference spends its minutes on CPU
        found = described or read_endpoint(target.session, endpoint)
        target.record = found  # the handle invokes on what was read: no second read
        target.component = choose_component(endpoint, list(found.component_names), component)[
            0
        ]  # the one scored, on either path

    def invoke(request: dict) -> dict | None:
        try:
            return target.invoke(json.dumps(request)).json()
        except InvocationError as e:
            if 400 <= e.status < 500 and request.get(
                "echo"
            ):  # log-probabilities are optional for a container
                return None
            raise

    with tempfile.TemporaryDirectory(prefix="smneuron-evaluate-") as work:
        reference = reference_outputs(model, records, t.max_new_tokens, work)
        candidate = collect(invoke, records, t.max_new_tokens, reference, t.top_logprobs)
        return score(reference, candidate, records, t, Path(work) / TOKENIZER_DIR)


# each kind's scorer: this stage's half of the kind strategy
_SCORERS: dict[ModelKind, Any] = {ENCODER: _score_encoder, GENERATION: _score_generation}


def _check_model_dir(model: Path) -> None:
    """The reference's model: a local directory with its config.json and tokenizer (nothing is fetched from a hub).

    Raises:
        ConfigError: no such directory, or no config.json in it. CompileError: no tokenizer files.
    """
    if not model.is_dir():
        raise ConfigError(
            f"--model {model}: no such directory.",
            hint="Give the uncompiled model's directory (what save_pretrained wrote: config.json, weights, tokenizer); "
            "nothing is downloaded from a hub.",
        )
    if not (model / "config.json").is_file():
        raise ConfigError(
            f"--model {model} has no config.json: it is not a saved Hugging Face model.",
            hint="Give the directory model.save_pretrained(DIR) and tokenizer.save_pretrained(DIR) wrote.",
        )
    check_tokenizer(model)
