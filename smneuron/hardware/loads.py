"""The load ``compare_instances`` puts on each instance type, one class per model kind, and how it is built.

A load knows what it sends (the same requests to every type), how to read the layout a deploy gave a type, when
that type is ready to measure, and how to bench it: an encoder endpoint gets ``bench.encoder.run`` once the
endpoint is InService; a text-generation endpoint gets ``bench.generation.run_generation`` (streamed) once its inference
component's copies run. The deploy -> settle -> bench -> delete loop around them is ``hardware.workflow._measure``'s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smneuron.artifact.staging import describe_local
from smneuron.benchmark import encoder, prompts
from smneuron.benchmark.generation import run_generation
from smneuron.benchmark.generation_metrics import Slo
from smneuron.benchmark.prompts import Lengths, load_tokenizer, requests_from
from smneuron.endpoints import components
from smneuron.endpoints.handle import wait_for_endpoint
from smneuron.errors import ConfigError
from smneuron.hardware.report import Candidate
from smneuron.session import Session
from smneuron.specs.compare_settings import OUTPUT_TOKENS, PROMPT_TOKENS


@dataclass
class Profile:
    """The bench settings every type gets (``smneuron bench``'s)."""

    profile: str = "sweep"
    duration_s: float = 10
    concurrency: int = 16
    concurrencies: list[int] | None = None
    rates: int = 3
    warmup_s: float = 1.0
    cooldown_s: float = 0.5
    rate: float | None = None  # the constant and poisson profiles' requests per second

    def describe(self) -> dict:
        return {
            "profile": self.profile,
            "duration_s": self.duration_s,
            "concurrency": self.concurrency,
            "concurrencies": self.concurrencies,
            "rates": self.rates,
            **({"rate": self.rate} if self.rate is not None else {}),
        }

    def shaping(self) -> dict:
        """The keywords both kinds' runners take alike: the load's shape and its unmeasured edges."""
        rate = {"rate": self.rate} if self.rate is not None else {}
        return {"profile": self.profile, "duration_s": self.duration_s, "concurrencies": self.concurrencies,
                "rates": self.rates, **rate, "warmup_s": self.warmup_s, "cooldown_s": self.cooldown_s}  # fmt: skip


@dataclass
class EncoderLoad:
    """The same request bodies (``{"inputs": ...}`` or OpenAI embeddings) to every encoder endpoint."""

    payloads: list[bytes]
    source: str
    profile: Profile
    openai: bool = False

    def describe(self) -> dict:
        return {
            **self.profile.describe(),
            "payloads": len(self.payloads),
            "source": self.source,
            "openai": self.openai,
        }

    def placed(self, c: Candidate, plan: Any) -> None:
        env = plan.environment
        c.layout = f"{env.get('SAGEMAKER_MODEL_SERVER_WORKERS', '?')} workers x {env.get('OMP_NUM_THREADS', '?')} threads"

    def settle(self, c: Candidate, session: Session, timeout: float) -> None:
        wait_for_endpoint(c.endpoint, session=session, timeout=timeout)  # type: ignore[arg-type]

    def bench(self, c: Candidate, session: Session) -> None:
        p = self.profile
        report = encoder.run(
            endpoint=c.endpoint,
            session=session,
            payloads=self.payloads,
            concurrency=p.concurrency,
            **p.shaping(),
            instance_type=c.instance_type,
            price=c.hourly_usd,
        )
        c.report = report.to_dict()
        c.latencies_ms = max(report.runs, key=lambda r: r.throughput_rps).latencies


@dataclass
class GenerationLoad:
    """The same streamed completions (prompts exact to the model's tokenizer, or a dataset's) to every type's
    copies: one instance, as many copies as its plan places, all measured together."""

    bodies: list[bytes]
    source: str
    profile: Profile
    tokenizer: Any = None  # counts the tokens streamed back
    lengths: dict = field(default_factory=dict)  # prompt and output tokens asked for
    slo: Slo = field(default_factory=Slo)

    def describe(self) -> dict:
        return {
            **self.profile.describe(),
            "requests": len(self.bodies),
            "source": self.source,
            **self.lengths,
        }

    def placed(self, c: Candidate, plan: Any) -> None:
        tp = plan.model_data.generation.tensor_parallel_size
        c.component, c.copies = plan.component_name, plan.copies
        c.layout = f"{plan.copies} {'copy' if plan.copies == 1 else 'copies'} x tp {tp}"

    def settle(self, c: Candidate, session: Session, timeout: float) -> None:
        components.wait(session, c.component, timeout=timeout)  # type: ignore[arg-type]

    def bench(self, c: Candidate, session: Session) -> None:
        p = self.profile
        report = run_generation(
            bodies=self.bodies,
            endpoint=c.endpoint,
            session=session,
            component=c.component,
            tokenizer=self.tokenizer,
            max_concurrency=p.concurrency,
            **p.shaping(),
            slo=self.slo,
            instance_type=c.instance_type,
            copies=c.copies,
            copies_per_instance=c.copies,
            price=c.hourly_usd,
            load=self.describe(),
        )
        c.report = report.to_dict()


def encoder_load(
    texts: list[str] | None,
    data: str | Path | None,
    built: dict[str, Any],
    openai: bool,
    profile: Profile,
) -> EncoderLoad:
    if texts:
        bodies, source = [json.dumps({"inputs": t}).encode() for t in texts], "the texts given"
    elif data:
        bodies, source = prompts.load_payloads(data), str(data)
    else:
        tokenizer = _tokenizer(built)
        if tokenizer is None:
            raise ConfigError(
                "No inputs to send: the artifacts have no tokenizer.json to draw texts from.",
                hint="Pass --data requests.jsonl (one text per line).",
            )
        bodies, source = (
            prompts.load_payloads(tokenizer=tokenizer),
            "texts drawn from the model's vocabulary, seed 0",
        )
    return EncoderLoad(prompts.as_openai_embeddings(bodies) if openai else bodies, source, profile, openai)


def _tokenizer(built: dict[str, Any]) -> Path | None:
    """The tokenizer.json of the first artifact that has one (every target's comes from the same model)."""
    return next(
        (
            p / "tokenizer.json"
            for p in built.values()
            if isinstance(p, Path) and (p / "tokenizer.json").is_file()
        ),
        None,
    )


def generation_load(
    built: dict[str, Any],
    data: str | Path | None,
    prompt_tokens: Lengths | int | None,
    output_tokens: Lengths | int | None,
    profile: Profile,
    slo_ttft_ms: float | None,
    slo_itl_ms: float | None,
) -> GenerationLoad:
    """The streamed requests every type gets; refused when they cannot fit an artifact's sequence length."""
    prompt = Lengths(prompt_tokens) if isinstance(prompt_tokens, int) else prompt_tokens
    output = Lengths(output_tokens) if isinstance(output_tokens, int) else output_tokens
    prompt = prompt or (None if data else Lengths(PROMPT_TOKENS))
    output = output or Lengths(OUTPUT_TOKENS)
    tokenizer = _tokenizer(built)
    if not data and tokenizer is None:
        raise ConfigError(
            "No prompts to send: the artifacts have no tokenizer.json to make prompts of exact lengths with.",
            hint="Pass --data prompts.jsonl (one prompt or chat per line).",
        )
    longest = (prompt.max or prompt.mean if prompt else 0) + (output.max or output.mean)
    for target, artifact in (
        built.items() if prompt else ()
    ):  # a dataset's prompts have no length to check here
        if isinstance(artifact, Path):
            sequence = describe_local(artifact).generation.sequence_length  # type: ignore[union-attr]
            if longest > sequence:
                raise ConfigError(
                    f"Prompt + output tokens reach {longest}, beyond the {target} artifact's sequence length "
                    f"({sequence}).",
                    hint="Lower --prompt-tokens / --output-tokens, or compile with a longer --sequence-length.",
                )
    bodies = requests_from(tokenizer_path=tokenizer, prompt_tokens=prompt, output_tokens=output, dataset=data)
    source = (
        str(data)
        if data
        else f"synthetic prompts of {prompt.mean} tokens exact to the model's tokenizer, seed 0"  # type: ignore[union-attr]
    )
    return GenerationLoad(
        bodies,
        source,
        profile,
        tokenizer=load_tokenizer(tokenizer) if tokenizer else None,
        lengths={"prompt_tokens": prompt.mean if prompt else None, "output_tokens": output.mean},
        slo=Slo(slo_ttft_ms, slo_itl_ms),
    )
