"""`smneuron invoke`: one request to an endpoint or a server's URL, the answer printed (an encoder's texts or a file's
bytes; text generation's chat, prompt or stream; an asynchronous endpoint's queued request)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from smneuron.cli._common import JsonOpt, console, print_json, state
from smneuron.errors import ConfigError, InvocationError, SmneuronError, UsageError


def invoke_cmd(
    ctx: typer.Context,
    name: str = typer.Argument(None, help="Endpoint name (or use --url for a local endpoint)."),
    text: list[str] = typer.Argument(None, help="Input text(s)."),
    url: str = typer.Option(None, "--url", help="Local endpoint URL, e.g. http://127.0.0.1:8080."),
    data: Path = typer.Option(None, "--data", help="Send this file's bytes as the body instead."),
    content_type: str = typer.Option("application/json", "--content-type", help="With --data."),
    accept: str = typer.Option("application/json", "--accept", help="Response type."),
    stream: bool = typer.Option(False, "--stream", help="Text generation: print tokens as they arrive."),
    max_tokens: int = typer.Option(None, "--max-tokens", help="Text generation: tokens to generate (128)."),
    prompt: bool = typer.Option(False, "--prompt", help="Text generation: a completion, not a chat message."),
    seed: int = typer.Option(None, "--seed", help="Text generation: sampling seed (a reproducible answer)."),
    temperature: float = typer.Option(None, "--temperature", help="Text generation: 0 is greedy."),
    component: str = typer.Option(
        None, "--component", help="Text generation: the inference component to ask (default: the only one)."
    ),
    asynchronous: bool = typer.Option(
        False, "--async", help="Queue it on an asynchronous endpoint (its input to S3)."
    ),
    wait: float = typer.Option(
        None, "--wait", help="With --async: wait up to this many seconds for the answer and print it.", min=1
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Invoke an endpoint and print the answer.

    Texts (or a raw body with --data) for an encoder; for a text-generation endpoint the texts are a chat message
    (--prompt: a completion; --stream prints tokens as they arrive).
    """
    from smneuron.artifact.kind import ENCODER, GENERATION
    from smneuron.cli.generation_cmds import generate
    from smneuron.endpoints.handle import Endpoint
    from smneuron.endpoints.invoke import server_url

    name, text = _target(name, url, text)
    from smneuron.endpoints.streaming import check_sampling

    # vLLM's ranges, before anything is sent (exit 2); 0 tokens used to mean "not given" and sent the encoder's body
    check_sampling(max_tokens=max_tokens, seed=seed, temperature=temperature)
    url = server_url(url, "--url") if url else None  # named as typed when it is not a server's URL
    ep = Endpoint(name, url=url, session=None if url else state(ctx).session())
    ep.component = component
    asked = stream or max_tokens is not None or prompt or seed is not None or temperature is not None
    # plain texts go as each kind asks: {"inputs": texts} to an encoder, a chat message to text generation (the
    # endpoint says what it serves; a URL does not: an encoder's body, unless a generation flag was given)
    texts_as = {ENCODER: "inputs", GENERATION: "chat"}
    generating = bool(asked or (not data and texts_as[ep.kind or ENCODER] == "chat"))
    _refuse_dropped(generating, text, data, content_type, accept, asynchronous or wait is not None)
    if generating:
        return generate(
            ep,
            " ".join(text or []),
            stream=stream,
            max_tokens=max_tokens if max_tokens is not None else 128,
            prompt=prompt,
            as_json=as_json,
            seed=seed,
            temperature=temperature,
        )
    body, kind = _encoder_body(text, data, content_type, queued := asynchronous or wait is not None)
    if queued:
        return _invoke_async(ep, body, kind, accept, wait, as_json)
    r = _invoked(ep, body, kind, accept, data)
    try:
        answer = r.json()
    except ValueError:
        answer = None
    if as_json:  # the answer with where it came from
        body = answer if answer is not None else r.body.decode(errors="replace")
        print_json(
            {"endpoint": name or url, "status": r.status, "content_type": r.content_type, "answer": body}
        )
    elif answer is not None:
        print_json(answer, compact_numbers=True)
    else:
        typer.echo(r.body.decode(errors="replace"))


def _target(name: str | None, url: str | None, text: list[str] | None) -> tuple[str | None, list[str] | None]:
    """The endpoint's name and the texts: with --url, the first word is a text, not a name."""
    if url and name:
        return None, [name, *(text or [])]
    if not url and not name:
        raise UsageError(
            "No endpoint given.", hint='Pass its name (`smneuron invoke NAME "hello"`) or --url URL.'
        )
    return name, text


def _refuse_dropped(
    generating: bool, text: list[str] | None, data: Path | None, content_type: str, accept: str, queued: bool
) -> None:
    """Flags the request would not carry, refused rather than dropped: texts beside --data (the file's bytes went,
    the texts not), and with a text-generation request (a chat message or --prompt, JSON both ways, answered at once)
    --data, --content-type, --accept, --async and --wait (each was taken and sent nowhere).

    Raises:
        UsageError: one of them.
    """
    if text and data is not None:
        raise UsageError(
            "Texts and --data were both given: the file's bytes would be the whole body, and the texts not sent.",
            hint="Give texts, or --data FILE with its --content-type.",
        )
    if not generating:
        return
    given = [f for f, on in (("--data", data is not None), ("--content-type", content_type != "application/json"),
                             ("--accept", accept != "application/json"), ("--async / --wait", queued)) if on]  # fmt: skip
    if given:
        raise UsageError(
            f"{', '.join(given)}: not for a text-generation request, which smneuron builds as JSON (a chat message, "
            "or a completion with --prompt), answered at once (streamed with --stream).",
            hint="Drop them; to send a raw body of your own to a text-generation endpoint, give --data FILE alone "
            "(no --stream, --max-tokens, --prompt, --seed or --temperature).",
        )


def _invoke_async(
    ep: Any, body: bytes | str, content_type: str, accept: str, wait: float | None, as_json: bool
) -> None:
    """`invoke --async`: queued, where its answer goes, and with --wait the answer and how long it took (from zero
    instances: a cold start, said)."""
    import time

    from smneuron.endpoints.invoke import async_result

    before = ep.read().instance_count
    started = time.monotonic()
    call = ep.invoke_async(body, content_type, accept)
    doc = {"endpoint": ep.name, "inference_id": call.inference_id, "input": call.input_location,
           "output": call.output_location, "failure": call.failure_location}  # fmt: skip
    if wait is None:
        if as_json:
            return print_json(doc)
        console().print(f"queued {call.inference_id} on {ep.name}: the answer goes to {call.output_location} "
                        f"(failures to {call.failure_location}); `--wait SECONDS` waits for it")  # fmt: skip
        return None
    try:
        r = async_result(ep.session, call, wait)
    except TimeoutError as e:
        raise SmneuronError(f"The asynchronous request {call.inference_id} was not answered within {wait:g} s ({e}).",
                            hint=f"It stays queued: its answer will be at {call.output_location}; `smneuron status "
                            f"{ep.name}` shows the backlog and its instances.") from None  # fmt: skip
    took = time.monotonic() - started
    cold = (
        " (the endpoint had 0 instances: it scaled out from zero, a full cold start)" if before == 0 else ""
    )
    if as_json:
        return print_json({**doc, "answer": r.json(), "seconds": round(took, 2), "from_zero": before == 0})
    print_json(r.json(), compact_numbers=True)
    console().print(f"answered after {took:.1f} s{cold}; kept at {call.output_location}")
    return None


def _invoked(ep: Any, body: bytes | str, kind: str, accept: str, data: Path | None) -> Any:
    """``ep.invoke``; a JSON Lines file sent as one JSON document (``--data x.jsonl`` without its content type) is
    refused by the model as JSON with "Extra data": said with the content type that sends it as lines.

    Raises:
        InvocationError: the endpoint's answer. ConfigError: that answer, for a JSON Lines file sent as JSON.
    """
    try:
        return ep.invoke(body, kind, accept)
    except InvocationError as e:
        lines = data is not None and data.suffix in (".jsonl", ".ndjson") and kind == "application/json"
        if not (lines and e.status == 400):
            raise
        raise ConfigError(
            f"{e.message.rstrip('.')}: {data.name} went as one JSON document (--content-type application/json).",
            hint="Send its lines as requests of their own with --content-type application/jsonlines (the model "
            "answers one line per line, as Batch Transform sends them).",
        ) from None


def _encoder_body(
    text: list[str] | None, data: Path | None, content_type: str, queued: bool
) -> tuple[bytes | str, str]:
    """An encoder's request: the file's bytes as given (--data), or the texts as {"inputs": ...} JSON."""
    if data:
        return data.read_bytes(), content_type
    if text:
        _said_if_a_body(text)
        return json.dumps({"inputs": text if len(text) > 1 else text[0]}), "application/json"
    how = "invoke --async" if queued else "invoke"
    raise ConfigError(
        "Nothing to send.", hint=f'Pass text(s): `smneuron {how} NAME "hello"`, or --data FILE.'
    )


def _said_if_a_body(text: list[str]) -> None:
    """A text that is a JSON object (`invoke ep '{"inputs": "hi"}'`) goes as a text, as every text does; said on
    standard error, with how to send it as the request body instead."""
    for t in text:
        try:
            is_object = t.lstrip().startswith("{") and isinstance(json.loads(t), dict)
        except ValueError:
            is_object = False
        if is_object:
            typer.echo(
                f"note: {t[:60]}{'...' if len(t) > 60 else ''} is a JSON object: it was sent as a text for the model "
                '({"inputs": TEXT}); to send it as the request body itself, save it to a file and give --data FILE.',
                err=True,
            )
            return
