"""Bench a deployed endpoint by name, from a notebook or the CLI: what it serves (encoder or text generation), its
instance type and count are read from SageMaker, so the report's cost column is filled without being told."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from smneuron.bench import encoder, prompts
from smneuron.bench.encoder import Report
from smneuron.bench.generation import LlmReport, bench_text_generation
from smneuron.endpoints.describing import overview
from smneuron.session import Session


def deployed_on(name: str, *, session: Session) -> dict:
    """``instance_type``, ``instance_count`` and ``kind`` of a SageMaker endpoint (one status read)."""
    o = overview(name, session=session)
    return {"instance_type": o["instance_type"], "instance_count": o["instances"] or 1, "kind": o["kind"]}


def bench_endpoint(
    name: str,
    texts: list[str] | None = None,
    *,
    data: str | Path | None = None,
    tokenizer: str | Path | None = None,
    session: Session | None = None,
    profile: str = "sweep",
    duration_s: float = 10,
    openai: bool = False,
    **run: Any,
) -> Report | LlmReport:
    """Benchmark the endpoint ``name`` as it is deployed.

    Args:
        name: the SageMaker endpoint.
        texts: encoder inputs to send (cycled); else ``data`` (a JSONL file) or texts generated from
            ``tokenizer``'s vocabulary. Text generation: ``data`` is a prompts dataset; else synthetic prompts
            (``prompt_tokens`` / ``output_tokens`` in ``run``).
        profile, duration_s: the load profile and the length of each run.
        openai: encoders: send OpenAI embeddings requests (``{"input": ...}``) instead of ``{"inputs": ...}``.
        run: everything else the encoder bench (``smneuron.run_bench``) or the text-generation bench
            (``smneuron.run_generation_bench``) takes; ``instance_type`` / ``instance_count`` default to the
            endpoint's own.

    Returns:
        The report (``Report`` for encoders, ``LlmReport`` for text generation): a table and a plot in a notebook.

    Raises:
        NotFoundError: no such endpoint.
        ConfigError: no inputs, an unknown profile, a run too short for its warm-up.
        BenchFailedError: every request failed.
    """
    sess = session or Session.from_env()
    found = deployed_on(name, session=sess)
    run.setdefault("instance_type", found["instance_type"])
    if found["kind"] == "text-generation":
        run.setdefault("prompt_tokens", None if data else 64)
        return bench_text_generation(
            endpoint=name,
            session=sess,
            dataset=data,
            tokenizer=tokenizer,
            profile=profile,
            duration_s=duration_s,
            **run,
        )
    run.setdefault("instance_count", found["instance_count"])
    if texts:
        payloads = [json.dumps({"inputs": t}).encode() for t in texts]
    else:
        payloads = prompts.load_payloads(data, tokenizer=tokenizer)
    if openai:
        payloads = prompts.as_openai_embeddings(payloads, name)
    return encoder.run(
        endpoint=name, session=sess, payloads=payloads, profile=profile, duration_s=duration_s, **run
    )
