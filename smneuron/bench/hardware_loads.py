"""The load ``compare_instances`` puts on each instance type, one class per model kind.

A load knows what it sends (the same requests to every type), how to read the layout a deploy gave a type, when
that type is ready to measure, and how to bench it: an encoder endpoint gets ``bench.encoder.run`` once the
endpoint is InService; a text-generation endpoint gets ``bench.generation.run_llm`` (streamed) once its inference
component's copies run. The deploy -> settle -> bench -> delete loop around them is ``hardware._measure``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from smneuron.bench import encoder
from smneuron.bench.generation import run_llm
from smneuron.bench.generation_metrics import Slo
from smneuron.bench.hardware_report import Candidate
from smneuron.endpoints import components
from smneuron.endpoints.handle import wait_for_endpoint
from smneuron.session import Session


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

    def describe(self) -> dict:
        return {
            "profile": self.profile,
            "duration_s": self.duration_s,
            "concurrency": self.concurrency,
            "concurrencies": self.concurrencies,
            "rates": self.rates,
        }


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
            profile=p.profile,
            duration_s=p.duration_s,
            concurrency=p.concurrency,
            concurrencies=p.concurrencies,
            rates=p.rates,
            warmup_s=p.warmup_s,
            cooldown_s=p.cooldown_s,
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
        c.layout = f"{plan.copies} copies x tp {tp}"

    def settle(self, c: Candidate, session: Session, timeout: float) -> None:
        components.wait(session, c.component, timeout=timeout)  # type: ignore[arg-type]

    def bench(self, c: Candidate, session: Session) -> None:
        p = self.profile
        report = run_llm(
            bodies=self.bodies,
            endpoint=c.endpoint,
            session=session,
            component=c.component,
            tokenizer=self.tokenizer,
            profile=p.profile,
            duration_s=p.duration_s,
            concurrencies=p.concurrencies,
            max_concurrency=p.concurrency,
            rates=p.rates,
            warmup_s=p.warmup_s,
            cooldown_s=p.cooldown_s,
            slo=self.slo,
            instance_type=c.instance_type,
            copies=c.copies,
            copies_per_instance=c.copies,
            price=c.hourly_usd,
            load=self.describe(),
        )
        c.report = report.to_dict()
