"""``compile_model``: the one entry for compiling either kind; the kind is decided here, once.

A causal LM (``--task text-generation``, or a config.json whose architecture is ``*ForCausalLM`` when no
task is given) goes to ``generation`` (optimum-neuron's export for inf2, a served copy for cpu, or an entry
of the optimum-neuron cache); everything else to ``encoder`` (TorchScript per sequence bucket). The CLI,
the SDK, the pipeline's compile job and the demos all come through here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smneuron.artifact.kind import ENCODER, GENERATION, ModelKind, model_kind
from smneuron.compilation import shapes
from smneuron.compilation.buckets import from_data
from smneuron.compilation.encoder import CompileEvent, CompileResult
from smneuron.compilation.encoder import compile_model as compile_encoder
from smneuron.compilation.generation import (
    GenerationCompileResult,
    compile_from_cache,
    compile_generation,
    read_config,
)
from smneuron.compilation.tasks import infer_task
from smneuron.errors import ConfigError, UsageError, at_least_one
from smneuron.files.user import dir_to_write
from smneuron.specs.compile_settings import COMPILE
from smneuron.specs.models import CompileSpec, override


@dataclass
class CompilePlan:
    """What a compile would do (``compile_model(..., dry_run=True)``): the kind, the settings as resolved, the graphs
    (an encoder's buckets x batch sizes; one export for text generation) and what smneuron decided, with why."""

    kind: str
    spec: CompileSpec
    shape: str  # the shapes in words: an encoder's batch sizes x buckets, a causal LM's sequence length and batch
    graphs: int
    notes: list[str] = field(default_factory=list)


def compile_model(
    model: str | Path,
    out_dir: str | Path | None,
    spec: CompileSpec | None = None,
    *,
    from_cache: bool = False,
    cache: bool = True,
    cache_dir: str | Path | None = None,
    jobs: int | None = None,
    progress: Callable[[CompileEvent], None] | None = None,
    data: str | Path | None = None,
    dry_run: bool = False,
    **overrides: Any,
) -> CompileResult | GenerationCompileResult | CompilePlan:
    """Compile ``model`` into the artifact directory ``out_dir``, for either kind of model.

    Args:
        model: a Hugging Face model directory (save_pretrained layout), or with ``from_cache`` a hub id.
        out_dir: the artifact directory to create (not needed with ``dry_run``).
        spec: compile settings; keyword ``overrides`` (``target="cpu"``, ``task="text-generation"``, ...)
            are applied on top and validated like command-line flags.
        from_cache: text generation: ``model`` is a hub id whose configuration is in the optimum-neuron cache.
        cache, cache_dir, jobs, progress: encoders: the compile cache, parallel buckets, progress events.
        data: encoders: a JSON Lines file of the user's texts; the buckets are placed on their token lengths
            (``compilation.buckets``, said) instead of the default, and given buckets are refused beside it.
        dry_run: compile nothing: return the ``CompilePlan`` (the settings as resolved, the defaults applied and
            why, the number of graphs), read from config.json alone.

    Returns:
        ``CompileResult`` (encoders) or ``GenerationCompileResult`` (text generation); both carry ``out_dir``,
        ``manifest``, ``seconds`` and ``notes`` (what smneuron inferred, e.g. the task); with ``dry_run`` a
        ``CompilePlan``.

    Raises:
        ConfigError: bad settings, or ``from_cache`` for an encoder task.
        UsageError: ``out_dir`` is a file, or its place cannot take a new folder.
        MissingDependencyError: torch / transformers / the target's Neuron package / optimum-neuron missing.
        CompileError: loading, tracing, exporting or validation failed.
    """
    # what the user chose (a keyword, a flag, the project file, a spec made with it): a chosen sequence length is never
    # changed, the static shapes not chosen get the defaults (compilation.shapes), the other kind's are refused
    given = {*overrides, *(spec.model_fields_set if spec is not None else ())}
    chosen, shapes_chosen = "sequence_length" in given, set(shapes.SHAPE_FIELDS) & given
    spec = override(spec or CompileSpec(), **overrides) if overrides else (spec or CompileSpec())
    if out_dir is None and not dry_run:
        raise UsageError("compile needs the artifact directory to write.", hint="Give out_dir (-o/--output).")
    out_dir = out_dir if dry_run else dir_to_write(out_dir)  # before minutes of compiling, not after
    if jobs is not None:
        at_least_one(
            jobs,
            "jobs (--jobs)",
            "Leave it out: one process per bucket for Neuron targets, in process for cpu and cuda.",
        )
    if from_cache and spec.task is not None and not GENERATION.holds(spec):
        raise ConfigError(
            f"--from-cache is for text generation (the optimum-neuron cache holds causal LMs); the task is {spec.task}.",
            hint="Drop --from-cache, or use --task text-generation.",
        )
    if not from_cache and Path(model).is_file():
        raise ConfigError(
            f"{model} is a file; compile takes a model directory (config.json, the weights and the tokenizer, as "
            "save_pretrained writes them).",
            hint="Pass the directory the model was saved to. Texts to send go to `smneuron invoke`, `bench --data` "
            "or the pipeline's evaluation data.",
        )
    # decided once: the optimum-neuron cache holds causal LMs; else the task, or config.json (artifact.kind)
    kind, note = (GENERATION, "") if from_cache else model_kind(model, spec.task)
    _refuse_other_kinds(kind, {f for f in given if getattr(spec, f) != _default(f)})
    settings = dict(from_cache=from_cache, cache=cache, cache_dir=cache_dir, jobs=jobs, progress=progress,
                    sequence_chosen=chosen, data=data, shapes_chosen=shapes_chosen)  # fmt: skip
    done = (
        _PLANNERS[kind](model, spec, **settings)
        if dry_run
        else _COMPILERS[kind](model, out_dir, spec, **settings)
    )
    done.notes[:0] = [note] if note else []
    return done


def _default(field: str) -> Any:
    return CompileSpec.model_fields[field].get_default(call_default_factory=True)


def _refuse_other_kinds(kind: ModelKind, given: set[str]) -> None:
    """A compile setting of the other kind (``COMPILE``'s table says which kind takes each), given by flag, keyword or
    project file, is refused, never dropped: `--tensor-parallel-size 2` compiled an encoder as if it was not there.
    ``given`` holds those set to other than their default (a whole spec passed on, as compare and the pipeline's
    compile step pass theirs, sets every field, most to its default)."""
    foreign = [o for o in COMPILE if o.kind and o.kind != kind and o.name in given]
    if foreign:
        named = ", ".join(f"{o.flag.split('/')[0]} ({o.keyword}=, {o.key})" for o in foreign)
        raise ConfigError(
            f"This model compiles as {kind.title}, and {named} only shape{'s' * (len(foreign) == 1)} "
            f"{foreign[0].kind.replace('-', ' ')} compiles: {'it' if len(foreign) == 1 else 'they'} would be ignored.",
            hint=f"Leave {'it' if len(foreign) == 1 else 'them'} out (from the command, the keywords or smneuron.yaml's "
            "compile section), or give the --task the settings are for.",
        )


def _encoder(model: str | Path, out_dir: Path, spec: CompileSpec, **settings: Any) -> CompileResult:
    settings.pop("from_cache")
    settings.pop("sequence_chosen")
    spec, said = _encoder_shapes(Path(model), spec, set(settings.pop("shapes_chosen")), settings.pop("data"))
    result = compile_encoder(model, out_dir, spec, shapes="; ".join(said) or None, **settings)
    result.notes[:0] = said
    return result


def _encoder_shapes(
    model: Path, spec: CompileSpec, chosen: set[str], data: str | Path | None
) -> tuple[CompileSpec, list[str]]:
    """The batch sizes and buckets an encoder compiles, and what was said of them: buckets placed on the user's texts
    (``--data``: compilation.buckets), the defaults (compilation.shapes) in the fields nobody chose."""
    placed, config = None, read_config(model) if (model / "config.json").is_file() else None
    if data is not None and config is not None:
        if "buckets" in chosen:
            raise UsageError("--data chooses the buckets from your texts, and --buckets (or compile.buckets) chose "
                             "them too.", hint="Give one of them.")  # fmt: skip
        limit = int(config.get("max_position_embeddings") or 512)
        buckets, placed = from_data(model, Path(data), limit)
        spec, chosen = spec.model_copy(update={"buckets": buckets}), chosen | {"buckets"}
    spec, choice = shapes.apply(spec, config, chosen) if config is not None else (spec, None)
    said = [placed] if placed else []
    if choice is not None:
        said.append(f"shapes: {choice.reason}; {choice.graphs} graphs ({shapes.GRAPHS_WHY}); --batch-size, "
                    "--batch-sizes and --buckets choose others")  # fmt: skip
    return spec, said


def _plan_encoder(model: str | Path, spec: CompileSpec, **settings: Any) -> CompilePlan:
    model = Path(model)
    if not (model / "config.json").is_file():
        raise ConfigError(f"{model} has no config.json: it is not a Hugging Face model directory.",
                          hint="Save the model with model.save_pretrained(DIR) and tokenizer.save_pretrained(DIR).")  # fmt: skip
    notes = []
    if spec.task is None:
        task, why = infer_task(model)
        spec = spec.model_copy(update={"task": task})
        notes.append(f"task {task} inferred from {why} (choose another with --task)")
    spec, said = _encoder_shapes(model, spec, set(settings["shapes_chosen"]), settings["data"])
    graphs = len(spec.buckets) * len(spec.all_batch_sizes)
    shape = (
        f"batch sizes {','.join(map(str, spec.all_batch_sizes))} x buckets {','.join(map(str, spec.buckets))}"
    )
    return CompilePlan(str(ENCODER), spec, shape, graphs, [*said, *notes])


def _plan_generation(model: str | Path, spec: CompileSpec, **settings: Any) -> CompilePlan:
    spec = spec.model_copy(update={"task": GENERATION})
    note = None
    if not settings["from_cache"]:
        spec, note = _fitted_sequence(Path(model), spec, settings["sequence_chosen"])
    shape = (f"sequence length {spec.sequence_length}, batch {spec.batch_size}, tensor parallel "
             f"{spec.tensor_parallel_size}")  # fmt: skip
    return CompilePlan(str(GENERATION), spec, shape, 1, [note] if note else [])


def _generation(
    model: str | Path, out_dir: Path, spec: CompileSpec, *, from_cache: bool, sequence_chosen: bool,
    data: str | Path | None = None, **_: Any,
) -> GenerationCompileResult:  # fmt: skip
    if data is not None:
        raise UsageError("--data places an encoder's sequence buckets; text generation compiles one sequence length.",
                         hint="Give --sequence-length instead, or leave --data out.")  # fmt: skip
    spec = spec.model_copy(update={"task": GENERATION})
    if from_cache:
        return compile_from_cache(str(model), out_dir, spec)
    spec, note = _fitted_sequence(Path(model), spec, sequence_chosen)
    result = compile_generation(model, out_dir, spec)
    if note:
        result.notes.insert(0, note)
    return result


def _fitted_sequence(model: Path, spec: CompileSpec, chosen: bool) -> tuple[CompileSpec, str | None]:
    """The default sequence length, fitted to a model with fewer positions (``shapes.fitted_sequence``), said."""
    fitted, positions = shapes.fitted_sequence(spec, read_config(model) if model.is_dir() else {}, chosen)
    if positions is None:
        return spec, None
    note = (f"sequence length {positions}: the model's max_position_embeddings (the default "
            f"{spec.sequence_length} is longer; --sequence-length chooses another)")  # fmt: skip
    return fitted, note


# each kind's compiler and its dry run: this stage's half of the kind strategy
_COMPILERS: dict[ModelKind, Callable[..., Any]] = {ENCODER: _encoder, GENERATION: _generation}
_PLANNERS: dict[ModelKind, Callable[..., CompilePlan]] = {
    ENCODER: _plan_encoder,
    GENERATION: _plan_generation,
}
