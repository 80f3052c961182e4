"""``tune``: an encoder's batch size and buckets chosen by measurement on the target (issue 63 #3).

A small grid around compile's default (``compilation.shapes``: the size class's batch size halved, as it is and
doubled, x the default bucket ladder and one bucket of the longest; or the ladder placed on ``data``'s texts) is
compiled (the compile cache makes a second tune cheap), each candidate is served where the target runs (cpu here,
cuda on a GPU; inf1/inf2 only where the Neuron runtime is: otherwise refused with the prior, compile's own default)
and measured with the bench's own throughput profile at the load's concurrency and alone (concurrency 1), the same
requests for every candidate. The pick: the highest throughput whose p99 under load meets ``slo_p99_ms`` and whose
throughput meets ``min_throughput`` (on one instance type, the highest throughput is the lowest $ per 1M requests);
none meeting them is refused with the table. The pick is compiled into ``out_dir`` with the curve in its manifest
(``Manifest.tuning``), and the compile command that rebuilds it is said.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from smneuron.artifact.kind import ENCODER, GENERATION, ModelKind, model_kind
from smneuron.artifact.manifest import Manifest
from smneuron.benchmark import encoder as bench
from smneuron.benchmark.prompts import load_payloads
from smneuron.catalog.instances import FIRST_INSTANCE, InstanceType
from smneuron.catalog.prices import prices_for
from smneuron.compilation import shapes
from smneuron.compilation.buckets import from_data
from smneuron.compilation.encoder import compile_model
from smneuron.compilation.generation import read_config
from smneuron.display.progress import step
from smneuron.errors import ConfigError, UsageError
from smneuron.hardware.tuning_report import html_page
from smneuron.serving.server import LocalEndpoint
from smneuron.specs.compile_settings import COMPILE
from smneuron.specs.models import BUCKET_LENGTHS, CompileSpec
from smneuron.specs.tune_settings import TUNE


@dataclass
class Measured:
    """One candidate layout and what it did."""

    batch_size: int
    buckets: list[int]
    rps: float = 0.0  # at the load's concurrency
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    alone_p50_ms: float = 0.0  # at concurrency 1
    usd_per_1m: float | None = None
    failed: str | None = None  # why it could not be measured

    @property
    def flags(self) -> str:
        return f"--batch-size {self.batch_size} --buckets {','.join(map(str, self.buckets))}" + (
            " --batch-sizes 1" if self.batch_size > 1 else ""
        )


@dataclass
class TuneResult:
    """The measured grid, the pick and why; ``out_dir`` holds the pick, compiled."""

    target: str
    instance: str
    concurrency: int
    candidates: list[Measured]
    pick: int
    criterion: str
    out_dir: Path
    notes: list[str] = field(default_factory=list)

    @property
    def picked(self) -> Measured:
        return self.candidates[self.pick]

    def _repr_html_(self) -> str:  # a notebook shows the table, the plot and the pick
        return html_page(self)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target, "instance": self.instance, "concurrency": self.concurrency,
            "criterion": self.criterion, "pick": self.pick, "cpus": os.cpu_count(),
            "candidates": [asdict(c) for c in self.candidates], "out_dir": str(self.out_dir), "notes": self.notes,
        }  # fmt: skip


def tune(
    model: str | Path,
    out_dir: str | Path,
    *,
    target: str = TUNE["target"].default,
    task: str | None = None,
    batch_sizes: list[int] | None = None,
    bucket_sets: list[list[int]] | None = None,
    data: str | Path | None = None,
    slo_p99_ms: float | None = None,
    min_throughput: float | None = None,
    instance: str | None = None,
    concurrency: int = TUNE["concurrency"].default,
    seconds: float = TUNE["seconds"].default,
) -> TuneResult:
    """Measure a grid of layouts of ``model`` on ``target`` and compile the pick into ``out_dir``.

    Args:
        batch_sizes / bucket_sets: the grid; default: compile's batch size for the model's size class halved, as it
            is and doubled, x buckets 32/64/128 (or placed on ``data``) and one bucket of the longest.
        data: JSON Lines texts: the requests sent, and the buckets placed on them.
        slo_p99_ms / min_throughput: what the pick must meet (p99 at ``concurrency``, req/s).
        instance: the instance type served as (worker layout, $ per 1M); default the target's first type.
        concurrency / seconds: the load of each throughput run, and each run's length.

    Raises:
        ConfigError: text generation, a target this machine cannot run, or no candidate meeting the SLO.
    """
    model, out_dir = Path(model), Path(out_dir)
    _TUNABLE[model_kind(model, task)[0]]()
    _check_runnable(target)
    config = read_config(model)
    grid, notes = _grid(model, config, target, batch_sizes, bucket_sets, data)
    specs = [_spec(target, task, c) for c in grid]  # every layout checked before the first is compiled
    instance = _served_as(instance, target)
    hourly, source = prices_for(None).quote(instance, None)
    with (
        tempfile.TemporaryDirectory(prefix="smneuron-tune-") as tmp,
        step(f"tune {model.name} for {target}", total=len(grid), unit="layouts") as shown,
    ):
        payloads = None
        for n, c in enumerate(grid):
            shown.update(f"batch {c.batch_size}, buckets {','.join(map(str, c.buckets))}")
            art = compile_model(model, Path(tmp) / f"c{n}", specs[n]).out_dir
            payloads = payloads or load_payloads(data, tokenizer=art, count=400)
            _measure(c, art, instance, payloads, concurrency, seconds, hourly)
            shown.advance()
    pick, criterion = _pick(grid, slo_p99_ms, min_throughput)
    notes.append(f"prices: {source}" if hourly else "no price for the instance: $ per 1M not shown")
    result = TuneResult(target, instance, concurrency, grid, pick, criterion, out_dir, notes)
    _write_pick(model, out_dir, target, task, result)
    return result


def _refuse_generation() -> None:
    raise ConfigError("tune chooses an encoder's batch size and buckets; a causal LM keeps optimum-neuron's batch size "
                      "and its capacity check.", hint="Compile it with `smneuron compile` (--batch-size).")  # fmt: skip


# each kind's answer to "can tune measure it": this stage's half of the kind strategy
_TUNABLE: dict[ModelKind, Callable[[], None]] = {ENCODER: lambda: None, GENERATION: _refuse_generation}


def _served_as(instance: str | None, target: str) -> str:
    """The instance type the layouts are served as: ``instance`` when it runs ``target``'s artifacts, else refused
    before the first compile (a typo failed every layout after compiling each, with pydantic's words).

    Raises:
        UnknownInstanceTypeError: no such type (with the nearest one). ConfigError: it runs another target's artifacts.
    """
    if instance is None:
        return FIRST_INSTANCE[target]
    found = InstanceType.parse(instance)
    if found.target != target:
        raise ConfigError(
            f"--instance {instance} runs {found.target} artifacts, and tune compiles for {target}.",
            hint=f"Give a type of the target's family (e.g. --instance {FIRST_INSTANCE[target]}), or --target "
            f"{found.target}.",
        )
    return found.name


def _check_runnable(target: str) -> None:
    """A target tune can serve on this machine: cpu always, cuda with a GPU, inf1/inf2 with the Neuron runtime."""
    if target == "cpu":
        return
    if target == "cuda":
        import torch

        if torch.cuda.is_available():
            return
        why = "no CUDA GPU is visible here"
    else:
        package = "torch_neuronx" if target == "inf2" else "torch_neuron"
        try:
            __import__(package)
            if Path("/dev/neuron0").exists():
                return
            why = "no NeuronCore here (/dev/neuron0)"
        except ImportError:
            why = f"the Neuron runtime is not here ({package} is not installed)"
    raise ConfigError(
        f"tune --target {target} measures the layouts where the model runs, and {why}.",
        hint=f"Run it on the {target} hardware itself, or take the prior: `smneuron compile MODEL --target {target} --dry-run` "
        "shows compile's default for the model's size class (Neuron's published batch sizes) and why.",
    )


def _grid(model: Path, config: dict, target: str, batch_sizes: list[int] | None,
          bucket_sets: list[list[int]] | None, data: str | Path | None) -> tuple[list[Measured], list[str]]:  # fmt: skip
    """The candidates: ``batch_sizes`` x ``bucket_sets`` (defaults around compile's own, said)."""
    notes = []
    default = shapes.default_shapes(config, target, set())
    assert default is not None  # nothing was chosen, so every default applies
    if batch_sizes is None:
        b = default.batch_size
        batch_sizes = sorted({max(1, b // 2), b, b * 2})
        notes.append(f"batch sizes {','.join(map(str, batch_sizes))}: compile's {b} for the model's size class, "
                     "halved and doubled")  # fmt: skip
    if bucket_sets is None:
        ladder = default.buckets
        if data is not None:
            limit = int(config.get("max_position_embeddings") or 512)
            ladder, placed = from_data(model, Path(data), limit)
            notes.append(placed)
        bucket_sets = [ladder, [max(ladder)]] if len(ladder) > 1 else [ladder]
    return [Measured(b, sorted(s)) for s in bucket_sets for b in sorted(set(batch_sizes))], notes


def _spec(target: str, task: str | None, c: Measured) -> CompileSpec:
    """The compile of one layout.

    Raises:
        UsageError: a batch size or bucket compile refuses, named as ``tune`` takes it.
    """
    try:
        return CompileSpec(target=target, task=task, batch_size=c.batch_size,  # type: ignore[arg-type]
                           batch_sizes=[1] if c.batch_size > 1 else None, buckets=c.buckets)  # fmt: skip
    except PydanticValidationError as e:
        batch, buckets = COMPILE.bounds(COMPILE["batch_size"]), BUCKET_LENGTHS
        problem = e.errors()[0]["msg"].removeprefix("Value error, ")
        raise UsageError(
            f"tune cannot compile batch {c.batch_size} with buckets {c.buckets}: {problem}.",
            hint=f"Give batch sizes (batch_sizes=, --batch-sizes) from {batch.least:g} to {batch.most:g} and bucket "
            f"lengths (bucket_sets=, --bucket-set) from {buckets[0]} to {buckets[1]} tokens.",
        ) from None


def _measure(c: Measured, art: Path, instance: str, payloads: list[bytes], concurrency: int, seconds: float,
             hourly: float | None) -> None:  # fmt: skip
    """Serve ``art`` as ``instance`` on this machine and run the bench's throughput profile under load and alone."""
    try:
        with LocalEndpoint(art, instance_type=instance) as ep:
            runs = [bench.run(url=ep.url, payloads=payloads, profile="throughput", duration_s=seconds,
                              concurrency=level, warmup_s=1.0, cooldown_s=0.5).runs[0]
                    for level in (concurrency, 1)]  # fmt: skip
    except Exception as e:  # a layout that does not serve is a row with its reason, not the end of the tune
        c.failed = str(e).splitlines()[0][:200]
        return
    c.rps, c.p50_ms, c.p99_ms = runs[0].throughput_rps, runs[0].latency_ms["p50"], runs[0].latency_ms["p99"]
    c.alone_p50_ms = runs[1].latency_ms["p50"]
    c.usd_per_1m = hourly / 3600 / c.rps * 1e6 if hourly and c.rps else None


def _pick(grid: list[Measured], slo_p99_ms: float | None, min_throughput: float | None) -> tuple[int, str]:
    """The highest throughput among the candidates that meet the SLO and the minimum throughput."""
    rules = [f"p99 <= {slo_p99_ms:g} ms" if slo_p99_ms is not None else "",
             f">= {min_throughput:g} req/s" if min_throughput is not None else ""]  # fmt: skip
    fits = [i for i, c in enumerate(grid) if not c.failed
            and (slo_p99_ms is None or c.p99_ms <= slo_p99_ms)
            and (min_throughput is None or c.rps >= min_throughput)]  # fmt: skip
    wanted = " and ".join(r for r in rules if r)
    if not fits:
        rows = "; ".join(f"batch {c.batch_size} x {c.buckets}: " + (c.failed or f"{c.rps:.0f} req/s, p99 "
                         f"{c.p99_ms:.0f} ms") for c in grid)  # fmt: skip
        raise ConfigError(f"No layout met {wanted or 'being served'}: {rows}.",
                          hint="Loosen --slo-p99-ms / --min-throughput, lower --concurrency, or serve it on a larger "
                          "instance (--instance).")  # fmt: skip
    best = max(fits, key=lambda i: grid[i].rps)
    return (
        best,
        f"the highest throughput{' with ' + wanted if wanted else ''} (so the lowest $ per 1M requests)",
    )


def _write_pick(model: Path, out_dir: Path, target: str, task: str | None, result: TuneResult) -> None:
    """The pick compiled into ``out_dir`` (a cache hit: it was compiled for the grid), the curve in its manifest."""
    c = result.picked
    why = f"tuned: batch {c.batch_size}, buckets {','.join(map(str, c.buckets))}, {result.criterion}"
    compile_model(model, out_dir, _spec(target, task, c), shapes=why)
    manifest = Manifest.read(out_dir)
    manifest.tuning = result.to_dict()
    manifest.write(out_dir)
    result.notes.append(
        f"`smneuron compile {shlex.quote(str(model))} --target {target} {c.flags}` builds the same (from the cache)"
    )
