"""`smneuron bench`'s settings, each declared once: ``BENCH``.

Each row is a keyword of ``smneuron.bench`` and a flag of `smneuron bench`, with its type, range, default, the model
kind that owns it and the load profiles that read it (``READS``): ``BenchRequest`` is the typed request the SDK's bench
reads; the CLI's options, the SDK's signature and the docs come from the same rows. The outputs (``--csv``, ``--plot``)
are the CLI's alone (``sdk=False``): the SDK returns the report, which writes itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from smneuron.specs.options import Option, Options

ENCODER, GENERATION = "encoder", "text-generation"
PROMPT_TOKENS, OUTPUT_TOKENS = 64, 128  # a synthetic text-generation load's default lengths
GOODPUT_TARGET = 0.99  # the share of requests that must meet the SLOs for a rate to count as good
IN_ACCOUNT_REQUESTS = 50  # an in-account benchmark job's request count when --max-requests is not given
# the load profiles a run takes (``benchmark.profiles``), and the search of the highest rate meeting the SLOs
PROFILES = ("synchronous", "concurrent", "throughput", "constant", "poisson", "sweep")
Profile = Literal[PROFILES + ("find-max",)]  # type: ignore[valid-type]
LENGTHS = "N or N,stdev,min,max (e.g. 256 or 256,64,32,512)"


def _enc(keyword: str, flag: str, what: str, **more: Any) -> Option:
    return Option(keyword, flag, kind=ENCODER, what=what, **more)


def _gen(keyword: str, flag: str, what: str, **more: Any) -> Option:
    return Option(keyword, flag, kind=GENERATION, what=what, **more)


BENCH = Options(
    "bench",
    [
        # where the load goes and how it is shaped: both kinds
        Option(
            "url",
            "--url",
            type=str,
            help="A running server's URL instead of an endpoint name, e.g. http://127.0.0.1:8080.",
        ),
        Option(
            "profile",
            "--rate-type",
            type=Profile,
            default="sweep",
            help="Load shape: synchronous, concurrent, throughput, constant, poisson, sweep or find-max "
            "(--profile is the AWS profile).",
        ),
        # at most a day a run: --duration 1e9 (a typo) held the terminal for 31 years of load
        Option(
            "duration_s", "--duration", type=float, above=0, most=86_400, default=10, help="Seconds per run."
        ),
        Option(
            "concurrency",
            "--concurrency",
            type=int,
            least=1,
            help="Requests in flight (throughput, sweep: 16; text generation 32).",
        ),
        Option(
            "concurrencies",
            "--concurrencies",
            type=list[int],
            least=1,
            comma=True,
            help="The concurrent profile's levels, e.g. 1,4,8.",
        ),
        Option(
            "rate",
            "--rate",
            type=float,
            above=0,
            help="Requests per second (constant, poisson; find-max: where the search starts).",
        ),
        Option("rates", "--rates", type=int, least=1, help="Constant rates in a sweep (3)."),
        Option(
            "precision",
            "--precision",
            type=float,
            least=0.01,
            most=1,
            help="find-max: stop when the bracket is within this fraction (0.1).",
        ),
        Option("data", "--data", type=Path, help="JSONL of inputs."),
        Option("tokenizer", "--tokenizer", type=Path, help="tokenizer.json to make texts or prompts with."),
        Option(
            "warmup_s",
            "--warmup",
            type=float,
            least=0,
            help="Seconds not measured at the start of each run (default 1; text generation 0).",
        ),
        Option(
            "cooldown_s",
            "--cooldown",
            type=float,
            least=0,
            help="Seconds not measured at the end of each run (default 0.5; text generation 0).",
        ),
        Option(
            "max_requests",
            "--max-requests",
            type=int,
            least=1,
            help=f"Stop a run after this many requests (--in-account: {IN_ACCOUNT_REQUESTS}).",
        ),
        Option("max_errors", "--max-errors", type=int, least=1, help="Stop a run after this many errors."),
        # what the load costs: the endpoint's own figures, unless given
        Option(
            "instance_type", "--instance", type=str, help="Instance type (for cost; default: the endpoint's)."
        ),
        Option(
            "instance_count",
            "--instance-count",
            type=int,
            least=1,
            help="Instances serving (for cost; default: the endpoint's, else 1).",
        ),
        Option("price", "--price", type=float, least=0, help="Hourly USD per instance (else the catalog)."),
        Option(
            "prices",
            None,
            type=dict[str, float],
            help="Hourly USD per instance type over the catalog's (the CLI gives the project file's).",
        ),
        # encoders
        _enc(
            "mean_tokens",
            "--mean-tokens",
            "generated encoder texts",
            type=int,
            least=1,
            default=24,
            help="Encoders: generated text length in tokens.",
        ),
        _enc(
            "spread",
            "--spread",
            "generated encoder texts",
            type=int,
            least=0,
            default=8,
            help="Encoders: standard deviation of the length.",
        ),
        _enc(
            "processes",
            "--processes",
            "load from several processes (encoder benches)",
            type=int,
            least=1,
            help="Encoders: send each run's load from N processes (one process sends through one event loop; the "
            "report says when it was the limit).",
        ),
        _enc(
            "openai",
            "--openai",
            "OpenAI embeddings requests",
            type=bool,
            help='Embeddings: send OpenAI requests ({"input": ...}) as GuideLLM / AIPerf do.',
        ),
        _enc(
            "slo_p99_ms",
            "--slo-p99-ms",
            "the encoder latency SLO",
            type=float,
            above=0,
            help="Encoders, with --find-max: the p99 latency SLO.",
        ),
        _enc(
            "plot",
            "--plot",
            "the encoder's plot",
            type=Path,
            sdk=False,
            help="Encoders: write a PNG (latency vs throughput, histogram).",
        ),
        # text generation
        _gen(
            "prompt_tokens",
            "--prompt-tokens",
            "synthetic prompts",
            type=Any,
            default=PROMPT_TOKENS,
            help=f"Text generation: prompt tokens, {LENGTHS} (synthetic, exact).",
        ),
        _gen(
            "output_tokens",
            "--output-tokens",
            "tokens generated per request",
            type=Any,
            default=OUTPUT_TOKENS,
            help=f"Text generation: output tokens (max_tokens + ignore_eos), {LENGTHS}.",
        ),
        _gen(
            "dataset",
            "--dataset",
            "a prompts dataset",
            type=Path,
            help="Text generation: JSONL of prompts or chat messages.",
        ),
        _gen(
            "slo_ttft_ms",
            "--slo-ttft-ms",
            "the time-to-first-token SLO",
            type=float,
            above=0,
            help="Goodput: time to first token target (ms).",
        ),
        _gen(
            "slo_itl_ms",
            "--slo-itl-ms",
            "the inter-token latency SLO",
            type=float,
            above=0,
            help="Goodput: inter-token latency target (ms).",
        ),
        _gen(
            "slo_latency_ms",
            "--slo-latency-ms",
            "the request latency goodput target",
            type=float,
            above=0,
            help="Goodput: request latency target (ms).",
        ),
        _gen(
            "goodput_target",
            "--goodput-target",
            "the share of requests meeting the SLOs",
            type=float,
            above=0,
            most=1,
            default=GOODPUT_TARGET,
            help="Text generation: share of requests that must meet the SLOs.",
        ),
        _gen(
            "copies",
            "--copies",
            "the copies serving",
            type=int,
            least=1,
            help="Text generation: copies serving (cost share; default: the endpoint's).",
        ),
        _gen(
            "copies_per_instance",
            "--copies-per-instance",
            "the copies' share of an instance",
            type=int,
            least=1,
            help="Copies one instance holds (default: the endpoint's).",
        ),
        _gen(
            "tensor_parallel_size",
            "--tensor-parallel-size",
            "NeuronCores per copy",
            type=int,
            least=1,
            help="Recorded in the report (default: the endpoint's).",
        ),
        _gen(
            "via",
            "--via",
            "SageMaker's /openai/v1 path (chat completions)",
            type=str,
            help="Text generation, an endpoint's path: invoke (InvokeEndpointWithResponseStream, the default) or "
            "openai (/openai/v1/chat/completions with a bearer token).",
        ),
        _gen(
            "component",
            "--component",
            "an endpoint's inference component",
            type=str,
            help="Text generation: the inference component to load (default: the only one).",
        ),
        _gen(
            "in_account",
            "--in-account",
            "SageMaker AI benchmark jobs (LLM endpoints)",
            type=bool,
            help="Text generation: run the profile as a SageMaker AI benchmark job (AIPerf, next to the endpoint) "
            "and from here; a table of both.",
        ),
        _gen(
            "csv",
            "--csv",
            "the text-generation CSV report",
            type=Path,
            sdk=False,
            help="Text generation: write a CSV (one row per run).",
        ),
        _gen(
            "html",
            "--html",
            "the text-generation HTML report",
            type=Path,
            sdk=False,
            help="Text generation: write a self-contained HTML report.",
        ),
        _gen(
            "png_dir",
            "--png-dir",
            "the text-generation plots",
            type=Path,
            sdk=False,
            help="Text generation: write the plots as PNGs here.",
        ),
    ],  # fmt: skip
    model="BenchRequest",
)
BenchRequest = BENCH.model

# what each load profile reads of the load settings; any other one given would be dropped, so it is refused
LOAD = ("concurrency", "concurrencies", "rate", "rates", "precision", "slo_p99_ms")
READS: dict[str, set[str]] = {
    "synchronous": set(),
    "concurrent": {"concurrencies"},
    "throughput": {"concurrency"},
    "constant": {"rate"},
    "poisson": {"rate"},
    "sweep": {"concurrency", "rates"},
    "find-max": {"concurrency", "rate", "precision", "slo_p99_ms"},
}
