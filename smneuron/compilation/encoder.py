"""Compile a Hugging Face model into an artifact directory: one traced graph per sequence bucket.

``compile_model`` is the one implementation used by the CLI, the SDK and the pipeline's compile step.
The artifact: ``model_b{batch}_s{seq}.pt`` per bucket (graphs without their weights on cpu and inf2),
``weights.pt`` (the parameters, once), tokenizer files, ``smneuron.json``. Before, every bucket file
carried its own copy of the weights: MiniLM with 3 buckets packed to 2.7x its weights.

One module because compiling, tracing a bucket and checking it against the model are one step (the worker
processes of a parallel compile re-enter the same functions).
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smneuron._version import __version__
from smneuron.artifact.hashing import sha256_file
from smneuron.artifact.manifest import MANIFEST_NAME, Bucket, Compiler, Manifest, Validation, Weights
from smneuron.compilation import cache as compile_cache
from smneuron.compilation import targets, tasks, vocabulary
from smneuron.display.cards import Card, Displayed, size
from smneuron.display.progress import Step, step
from smneuron.errors import CompileError, ConfigError
from smneuron.specs.models import CompileSpec, override

CPU_TOLERANCE = 1e-4
CUDA_MIN_COSINE = 0.99  # fp16/bf16 against fp32: below this the embeddings or logits are not the model's


@dataclass(frozen=True)
class CompileEvent:
    """Progress report: ``kind`` is cache_hit, bucket_started or bucket_done."""

    kind: str
    seq_len: int | None = None
    seconds: float | None = None
    batch_size: int | None = None


@dataclass(repr=False)
class CompileResult(Displayed):
    out_dir: Path
    manifest: Manifest
    cache_hit: bool
    seconds: float
    notes: list[str] = field(default_factory=list)  # what smneuron decided for the user (e.g. the task)

    def _card(self) -> Card:
        m = self.manifest
        seqs = sorted({b.seq_len for b in m.buckets})
        batches = sorted({b.batch_size for b in m.buckets})
        how = "reused from the compile cache" if self.cache_hit else f"compiled in {self.seconds:.1f} s"
        weights = sum(b.size_bytes for b in m.buckets) + (m.weights.size_bytes if m.weights else 0)
        return Card(
            title=f"{m.task} artifact for {m.compiler.target}: {self.out_dir}",
            brief=f"{str(self.out_dir)!r}, target={m.compiler.target}, task={m.task}, buckets={seqs}, {how}",
            rows=[
                ("model", f"{m.model_type} (source sha256 {m.source_model_sha256[:12]})"),
                ("buckets (tokens)", ", ".join(map(str, seqs))),
                ("batch sizes", ", ".join(map(str, batches))),
                ("compiler", f"{m.compiler.function} {' '.join(m.compiler.args)}".strip()),
                ("size", size(weights)),
                ("how", how),
                *[("note", n) for n in self.notes],
            ],
        )


def bucket_file(batch_size: int, seq_len: int) -> str:
    return f"model_b{batch_size}_s{seq_len}.pt"


def compile_model(
    model_dir: str | Path,
    out_dir: str | Path,
    spec: CompileSpec | None = None,
    *,
    cache: bool = True,
    cache_dir: str | Path | None = None,
    jobs: int | None = None,
    progress: Callable[[CompileEvent], None] | None = None,
    shapes: str | None = None,
    **overrides: Any,
) -> CompileResult:
    """Compile ``model_dir`` (HF save_pretrained layout) for ``spec.target`` into ``out_dir``.

    Args:
        model_dir: config.json + weights + tokenizer files.
        out_dir: artifact directory to create (must be empty or a previous artifact, which is replaced).
        spec: compile settings; keyword ``overrides`` (e.g. ``target="cpu"``) are applied on top.
        cache: reuse a previous identical compile (keyed on model files, spec, compiler versions).
        cache_dir: cache location (default SMNEURON_CACHE_DIR or the user cache dir).
        jobs: buckets compiled in parallel processes; default: one per bucket up to the CPU count for
            Neuron targets (minutes each), in-process for cpu (a second each: spawning costs more).
        progress: called with ``CompileEvent``s.
        shapes: how the batch sizes and buckets were chosen, and why (``compilation.shapes``), kept in the manifest.

    Returns:
        ``CompileResult`` with the manifest and whether it came from the cache.

    Raises:
        ConfigError: bad spec, or ``out_dir`` holds unrelated files.
        MissingDependencyError: torch / transformers / the target's Neuron package is missing.
        CompileError: loading, tracing or validation failed.
    """

    started = time.perf_counter()
    spec = override(spec or CompileSpec(), **overrides) if overrides else (spec or CompileSpec())
    model_dir, out_dir = Path(model_dir), Path(out_dir)
    spec, notes = _checked(model_dir, out_dir, spec)
    label = f"compile {model_dir.name} for {spec.target}"
    with step(label, total=len(spec.buckets) * len(spec.all_batch_sizes), unit="graphs") as shown:
        notify = _shown(progress, shown)
        args = targets.compiler_args(spec)
        vers = targets.versions(spec.target)
        model_hash = compile_cache.model_files_hash(model_dir)
        key = compile_cache.cache_key(
            model_hash,
            {**spec.model_dump(mode="json"), "shapes": shapes},
            args,
            {**vers, "smneuron": __version__},
        )
        root = compile_cache.cache_root(cache_dir)

        if cache:
            entry = compile_cache.lookup(root, key)
            if entry is not None:
                _clear(out_dir)
                compile_cache.materialise(entry, out_dir)
                _say_shapes(out_dir, shapes)
                notify(CompileEvent("cache_hit"))
                shown.finish("reused from the compile cache")
                return CompileResult(
                    out_dir, Manifest.read(out_dir), True, time.perf_counter() - started, notes
                )

        with tempfile.TemporaryDirectory(prefix="smneuron-compile-") as tmp:
            build = Path(tmp) / "artifact"
            build.mkdir()
            manifest = _build(model_dir, build, spec, args, vers, (model_hash, key, shapes), jobs, notify)
            if cache:
                compile_cache.store(root, key, build)
            _clear(out_dir)
            out_dir.mkdir(parents=True, exist_ok=True)
            for p in build.iterdir():
                shutil.move(str(p), out_dir / p.name)
        return CompileResult(out_dir, manifest, False, time.perf_counter() - started, notes)


def _say_shapes(out_dir: Path, shapes: str | None) -> None:
    """A cached artifact with this compile's account of its shapes (the same graphs may have been chosen another way:
    flags, the defaults, a tune)."""
    manifest = Manifest.read(out_dir)
    if manifest.shapes != shapes:
        manifest.shapes = shapes
        manifest.write(out_dir)


def _checked(model_dir: Path, out_dir: Path, spec: CompileSpec) -> tuple[CompileSpec, list[str]]:
    """What a compile needs before it hashes gigabytes: a model directory with its config and tokenizer, an output
    directory it may replace, the task (inferred from config.json when not given, and said), the target's backend.

    Raises:
        ConfigError, CompileError, MissingDependencyError: as ``compile_model`` says.
    """
    if not model_dir.is_dir():
        raise ConfigError(f"Model directory {model_dir} does not exist.")
    if not (model_dir / "config.json").is_file():
        raise CompileError(
            f"{model_dir} has no config.json: it is not a Hugging Face model directory.",
            hint="Save the model with model.save_pretrained(DIR) and tokenizer.save_pretrained(DIR).",
        )
    _check_out_dir(out_dir)
    vocabulary.check_tokenizer(model_dir)
    notes = [n for n in [vocabulary.vocabulary_note(model_dir)] if n]
    if spec.task is None:
        task, why = tasks.infer_task(model_dir)
        spec = spec.model_copy(update={"task": task})
        notes.append(f"task {task} inferred from {why} (choose another with --task)")
    targets.require_backend(spec.target)
    return spec, notes


def _shown(progress: Callable[[CompileEvent], None] | None, shown: Step) -> Callable[[CompileEvent], None]:
    """Compile events to the caller's callback (if any) and to the progress display."""

    def notify(e: CompileEvent) -> None:
        if progress:
            progress(e)
        if e.kind == "bucket_started":
            shown.update(f"tracing batch {e.batch_size} x {e.seq_len} tokens")
        elif e.kind == "bucket_done":
            shown.advance()
            shown.update(f"batch {e.batch_size} x {e.seq_len} tokens done in {e.seconds:.1f} s")

    return notify


def _build(
    model_dir: Path,
    build: Path,
    spec: CompileSpec,
    args: list[str],
    vers: dict[str, str],
    made: tuple[str, str, str | None],
    jobs: int | None,
    notify: Callable[[CompileEvent], None],
) -> Manifest:
    model_hash, key, chosen = made  # the model's hash, the cache key, how the shapes were chosen
    tokenizer_files = vocabulary.copy_tokenizer(model_dir, build)
    loaded = _load(model_dir, spec)
    max_pos = getattr(loaded.config, "max_position_embeddings", None)
    if max_pos and max(spec.buckets) > max_pos:
        raise ConfigError(
            f"Bucket {max(spec.buckets)} exceeds the model's max_position_embeddings ({max_pos}).",
            hint=f"Use buckets of at most {max_pos}.",
        )
    parallel = (
        jobs
        if jobs is not None
        else (1 if spec.target in ("cpu", "cuda") else min(len(spec.buckets), os.cpu_count() or 1))
    )
    shapes = [(bs, seq) for seq in spec.buckets for bs in spec.all_batch_sizes]
    if parallel > 1 and len(shapes) > 1:
        del loaded  # each worker process loads its own copy
        buckets = _buckets_in_processes(model_dir, build, spec, args, shapes, parallel, notify)
        loaded = _load(model_dir, spec)
    else:
        # cuda in fp16/bf16: checked against the fp32 model, as the Neuron targets' auto-cast is
        reference = _load(model_dir, spec, precision=None) if spec.target == "cuda" else None
        buckets = []
        for bs, seq in shapes:
            notify(CompileEvent("bucket_started", seq, batch_size=bs))
            buckets.append(_compile_bucket(loaded, spec, bs, seq, args, build, reference))
            notify(CompileEvent("bucket_done", seq, buckets[-1].compile_seconds, batch_size=bs))
    weights = _write_weights(loaded, spec.target, build)
    manifest = Manifest(
        smneuron_version=__version__,
        task=spec.task,
        model_type=str(getattr(loaded.config, "model_type", "unknown")),
        labels=loaded.labels,
        problem_type=loaded.problem_type,
        pooling=loaded.pooling,
        normalize=loaded.normalize,
        input_names=loaded.input_names,
        output=tasks.OUTPUTS[spec.task],
        batch_size=spec.batch_size,
        shapes=chosen,
        buckets=sorted(buckets, key=lambda b: (b.seq_len, b.batch_size)),
        weights=weights,
        tokenizer_files={n: sha256_file(build / n) for n in tokenizer_files},
        pad_token_id=loaded.pad_token_id,
        max_position_embeddings=max_pos,
        compiler=_compiler(spec, args),
        versions=vers,
        source_model_sha256=model_hash,
        cache_key=key,
        created_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    )
    manifest.write(build)
    return manifest


def _compiler(spec: CompileSpec, args: list[str]) -> Compiler:
    """How the files were made: the target's function and arguments, and what each target's casting did."""
    neuron = spec.target in ("inf1", "inf2")
    return Compiler(
        target=spec.target,
        function=targets.FUNCTIONS[spec.target],
        args=args,
        auto_cast=spec.auto_cast if neuron else None,
        precision=spec.precision if spec.target == "cuda" else None,
        auto_cast_type=spec.auto_cast_type if spec.target == "inf2" and spec.auto_cast != "none" else None,
        cores_per_model=spec.neuroncore_pipeline_cores or 1,
    )


def _buckets_in_processes(
    model_dir: Path,
    build: Path,
    spec: CompileSpec,
    args: list[str],
    shapes: list[tuple[int, int]],
    parallel: int,
    notify: Callable[[CompileEvent], None],
) -> list[Bucket]:
    """Each (batch size, bucket) traced in a worker process of its own (Neuron compiles take minutes each)."""
    buckets: list[Bucket] = []
    with ProcessPoolExecutor(max_workers=parallel, mp_context=_workers()) as pool:
        futures = {}
        for bs, seq in shapes:
            notify(CompileEvent("bucket_started", seq, batch_size=bs))
            futures[bs, seq] = pool.submit(
                _bucket_in_subprocess, str(model_dir), spec.model_dump(mode="json"), bs, seq, args, str(build),
                dict(os.environ),
            )  # fmt: skip
        for (bs, seq), fut in futures.items():
            buckets.append(Bucket.model_validate(fut.result()))
            notify(CompileEvent("bucket_done", seq, buckets[-1].compile_seconds, batch_size=bs))
    return buckets


def _load(model_dir: Path, spec: CompileSpec, **overrides: Any) -> tasks.LoadedModel:
    """The model as ``spec`` compiles it (cuda: in its precision, with the mask prepared outside)."""
    settings: dict[str, Any] = {
        "pooling": spec.pooling,
        "normalize": spec.normalize,
        "allow_random_weights": spec.allow_random_weights,
        "precision": spec.precision if spec.target == "cuda" else None,
        **overrides,
    }
    return tasks.load(model_dir, spec.task, **settings)


def _compile_bucket(
    loaded: tasks.LoadedModel,
    spec: CompileSpec,
    bs: int,
    seq: int,
    args: list[str],
    build: Path,
    reference: tasks.LoadedModel | None = None,
) -> Bucket:
    import torch

    example = tasks.sample_batch(
        build / "tokenizer.json", spec.task, bs, seq, loaded.pad_token_id, loaded.input_names
    )
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"neuron-s{seq}-") as workdir:
        result = targets.trace(spec.target, loaded.module, example, args, workdir)
    seconds = time.perf_counter() - t0
    name = bucket_file(bs, seq)

    check = tasks.sample_batch(
        build / "tokenizer.json", spec.task, bs, seq, loaded.pad_token_id, loaded.input_names, offset=bs + 3
    )
    if spec.target == "cuda":
        pinned = targets.cpu_pinned_ops(result.module)
        if pinned:
            raise CompileError(
                f"Bucket {seq} (batch {bs}): the traced graph creates tensors on the CPU ({pinned[0]}"
                + (f" and {len(pinned) - 1} more" if len(pinned) > 1 else "")
                + "): on a GPU it would fail with a device mismatch.",
                hint="This architecture builds tensors with a fixed device inside forward(); serve it with "
                "--target cpu or a Neuron target, or report the model to smneuron.",
            )
    with torch.no_grad():
        eager = (reference or loaded).module(*check).float()
        traced = result.module(*check).float()
    validation = compare(eager, traced)
    if spec.target == "cuda" and spec.max_abs_diff is None and not validation.cosine_min >= CUDA_MIN_COSINE:
        raise CompileError(
            f"Bucket {seq} (batch {bs}): in {spec.precision} the outputs drift from the fp32 model (cosine min "
            f"{validation.cosine_min:.6f}, below {CUDA_MIN_COSINE}; max |diff| {validation.max_abs_diff:.3g}).",
            hint="Compile with --precision fp32 (or bf16, whose range fp16 overflows less), or pass --max-abs-diff "
            "to accept the drift.",
        )
    limit = (
        spec.max_abs_diff
        if spec.max_abs_diff is not None
        else (CPU_TOLERANCE if spec.target == "cpu" else None)
    )
    if limit is not None and validation.max_abs_diff > limit:
        raise CompileError(
            f"Bucket {seq} (batch {bs}): traced outputs differ from the eager model by {validation.max_abs_diff:.3g} "
            f"(limit {limit:g}; cosine min {validation.cosine_min:.6f}).",
            hint="The model may have data-dependent control flow that tracing cannot capture."
            if spec.target == "cpu"
            else "Try --auto-cast none, or raise --max-abs-diff if the drift is acceptable.",
        )
    if targets.SHARED_WEIGHTS[spec.target]:  # the weights live once, in weights.pt
        targets.strip_weights(result.module)
    torch.jit.save(result.module, str(build / name))
    return Bucket(
        seq_len=seq,
        batch_size=bs,
        file=name,
        sha256=sha256_file(build / name),
        size_bytes=(build / name).stat().st_size,
        compile_seconds=round(seconds, 3),
        validation=validation,
        neuron_ops_percent=result.neuron_ops_percent,
    )


def _write_weights(loaded: tasks.LoadedModel, target: str, build: Path) -> Weights | None:
    """Store the model's parameters once (every bucket's graph was saved without them)."""
    import torch

    attach = targets.SHARED_WEIGHTS[target]
    if not attach:
        return None
    path = build / targets.WEIGHTS_FILE
    torch.save({n: p.detach().contiguous() for n, p in loaded.module.named_parameters()}, str(path))
    return Weights(file=path.name, sha256=sha256_file(path), size_bytes=path.stat().st_size, attach=attach)


def compare(reference: Any, candidate: Any) -> Validation:
    """Max abs diff and the smallest row-wise cosine similarity between two output tensors."""
    import torch

    a = reference.reshape(reference.shape[0], -1).double()
    b = candidate.reshape(candidate.shape[0], -1).double()
    cos = torch.nn.functional.cosine_similarity(a, b, dim=1, eps=1e-12)
    return Validation(max_abs_diff=float((a - b).abs().max()), cosine_min=float(cos.min()))


def _bucket_in_subprocess(
    model_dir: str,
    spec_data: dict,
    bs: int,
    seq: int,
    args: list[str],
    build: str,
    environment: dict[str, str],
) -> dict:
    """One bucket's compile in a worker forked from the preloaded forkserver (torch and transformers imported once,
    no threads started: as clean as a spawned process), with this compile's environment, not the forkserver's."""
    os.environ.clear()
    os.environ.update(environment)
    spec = CompileSpec.model_validate(spec_data)
    reference = _load(Path(model_dir), spec, precision=None) if spec.target == "cuda" else None
    return _compile_bucket(
        _load(Path(model_dir), spec), spec, bs, seq, args, Path(build), reference
    ).model_dump()


def _workers() -> Any:
    """Bucket compiles run in processes forked from multiprocessing's forkserver, which imports torch and
    transformers once (each spawned worker spent 3-4 s of CPU importing them); it starts no threads, so a worker
    is as clean as a spawned one (forking a process whose torch threads run is unsafe). Where there is no
    forkserver (not POSIX), workers are spawned. The first user of a process's forkserver decides what it imports.
    (``serving.pool.worker_context`` does the same for model servers; compilation sits below serving.)"""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(
        [
            "smneuron.startup.safe_path",
            "smneuron.startup.gc_pause",
            "torch",
            "transformers",
            "transformers.modeling_utils",
            "smneuron.fast_exit",
        ]
    )
    return ctx


def _check_out_dir(out_dir: Path) -> None:
    if out_dir.exists() and any(out_dir.iterdir()) and not (out_dir / MANIFEST_NAME).exists():
        raise ConfigError(
            f"Output directory {out_dir} is not empty and holds no smneuron artifact.",
            hint="Choose a new or empty directory; smneuron only replaces its own artifacts.",
        )


def _clear(out_dir: Path) -> None:
    if out_dir.exists():
        shutil.rmtree(out_dir)
