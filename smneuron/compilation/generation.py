"""Compile a causal LM for text generation: optimum-neuron's export for inf2, a served copy for cpu.

``compile_generation`` is the text-generation branch of ``smneuron compile`` (CLI, SDK and pipeline alike).
For inf2 it runs ``optimum-cli export neuron ... --instance_type inf2`` (optimum-neuron is in the
vLLM DLC and the pipeline's compile image; it is not installable without the Neuron SDK). For cpu the
model directory is copied as it is: the local stand-in of the vLLM container serves it with
transformers. Either way ``smneuron.json`` records batch size, sequence length, tp and dtype, which the
endpoint's ``SM_ON_*`` variables must match (the container refuses to start otherwise).
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from smneuron._version import __version__
from smneuron.artifact.hashing import sha256_file, tree_hash
from smneuron.artifact.links import check_file, inode_names
from smneuron.artifact.manifest import Compiler, Generation, GenerationManifest
from smneuron.catalog.capacity import ModelShape, Served, smallest_fit
from smneuron.compilation import vocabulary
from smneuron.display.cards import Card, Displayed
from smneuron.display.progress import step
from smneuron.errors import CompileError, ConfigError, MissingDependencyError
from smneuron.specs.models import CompileSpec

TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
MODEL_FILE_SUFFIXES = (".safetensors", ".bin", ".json", ".model", ".txt", ".gguf", ".jinja")


@dataclass(repr=False)
class GenerationCompileResult(Displayed):
    out_dir: Path
    manifest: GenerationManifest
    seconds: float
    command: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def _card(self) -> Card:
        g = self.manifest.generation
        shape = f"batch {g.batch_size}, sequence {g.sequence_length}, tp {g.tensor_parallel_size}, {g.dtype}"
        return Card(
            title=f"text-generation artifact for {self.manifest.compiler.target}: {self.out_dir}",
            brief=f"{str(self.out_dir)!r}, target={self.manifest.compiler.target}, {shape}",
            rows=[
                (
                    "model",
                    f"{self.manifest.model_type}, {g.num_parameters / 1e6:,.1f} M parameters ({g.source})",
                ),
                ("compiled as", shape),
                ("command", " ".join(self.command) or "-"),
                ("seconds", round(self.seconds, 1)),
                *[("note", n) for n in self.notes],
            ],
        )


def export_command(model: str, out_dir: Path, spec: CompileSpec) -> list[str]:
    """The optimum-neuron export, exactly as smneuron runs it (``optimum-cli export neuron``)."""
    return [
        sys.executable,
        "-m",
        "optimum.commands.optimum_cli",
        "export",
        "neuron",
        "--model",
        model,
        "--task",
        "text-generation",
        "--batch_size",
        str(spec.batch_size),
        "--sequence_length",
        str(spec.sequence_length),
        "--tensor_parallel_size",
        str(spec.tensor_parallel_size),
        "--torch_dtype",
        TORCH_DTYPES[spec.dtype],
        "--instance_type",
        "inf2",
        str(out_dir),
    ]


def read_config(model: Path) -> dict:
    try:
        return json.loads((model / "config.json").read_text())
    except (OSError, ValueError) as e:
        raise CompileError(
            f"{model} has no readable config.json ({e}).",
            hint="Pass a causal LM saved with save_pretrained (config.json, weights, tokenizer).",
        ) from None


def check_causal_lm(model: Path, config: dict) -> None:
    archs = [str(a) for a in config.get("architectures") or []]
    if not any(a.endswith("ForCausalLM") for a in archs):
        raise ConfigError(
            f"{model} is not a causal LM (architectures: {', '.join(archs) or 'none'}): text-generation needs "
            "a *ForCausalLM model.",
            hint="Pick another --task for an encoder, or point at a causal LM (Llama, Qwen, Mistral, ...).",
        )


def compile_generation(model: str | Path, out_dir: str | Path, spec: CompileSpec) -> GenerationCompileResult:
    """Compile (inf2) or prepare (cpu, cuda) a causal LM into an artifact directory a vLLM container serves.

    Args:
        model: a local model directory (config.json, weights, tokenizer).
        out_dir: artifact directory to create.
        spec: ``batch_size``, ``sequence_length``, ``tensor_parallel_size``, ``dtype``, ``target`` (cuda: tp is GPUs
            per copy, and batch size and sequence length are the served defaults vLLM starts with).

    Raises:
        ConfigError: not a causal LM, inf1, tp on cpu (or one that does not divide the heads on cuda), or a layout no inf2 instance holds.
        MissingDependencyError: inf2 without optimum-neuron (it runs in the vLLM DLC / Neuron hosts).
        CompileError: no tokenizer, or the export failed (with its last output lines).
    """

    started = time.monotonic()
    src, out = Path(model), Path(out_dir)
    if not src.is_dir():
        raise ConfigError(
            f"{src} is not a model directory.",
            hint="Save the model with save_pretrained, or deploy a hub model from the optimum-neuron cache "
            "with `smneuron compile HUB_ID --from-cache`.",
        )
    config = read_config(src)
    check_causal_lm(src, config)
    vocabulary.check_tokenizer(src)
    shape = ModelShape.from_config(config)
    notes: list[str] = []
    _check_layout(spec, config, shape)
    if out.exists() and any(out.iterdir()):
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    command: list[str] = []
    exported: dict[str, str] | None = None  # the export's own versions (inf2); the cpu target exports nothing
    if spec.target in ("cpu", "cuda"):
        function = _copy_weights(src, out, spec.target)
    else:
        local = Path(src).absolute() if Path(src).exists() else src  # the export runs in a folder of its own
        command = export_command(str(local), out.absolute(), spec)
        _run_export(command)
        function = "optimum-cli export neuron"
        exported = export_versions(out)
    files = {p.relative_to(out).as_posix(): sha256_file(p) for p in sorted(out.rglob("*")) if p.is_file()}
    manifest = _manifest(
        shape,
        spec,
        source=str(model),
        target=spec.target,
        function=function,
        args=command[3:],
        files=files,
        source_sha=tree_hash(src),
        exported=exported,
    )
    manifest.write(out)
    return GenerationCompileResult(out, manifest, time.monotonic() - started, command, notes)


def _check_layout(spec: CompileSpec, config: dict, shape: ModelShape) -> None:
    """Refuse what the target cannot serve, before anything is written: inf1, a sequence past the model's positions,
    tp on cpu, a tp that does not divide the heads on cuda (vLLM refuses it at start), a layout no inf2 instance holds.

    Raises:
        ConfigError: naming the flag to change.
    """
    if spec.target == "inf1":
        raise ConfigError(
            "Text generation is compiled with optimum-neuron for NeuronCore-v2 (inf2); inf1 is not supported.",
            hint="Use --target inf2 (or cpu to serve it on this machine).",
        )
    if spec.sequence_length > int(config.get("max_position_embeddings") or 1 << 30):
        raise ConfigError(
            f"--sequence-length {spec.sequence_length} exceeds the model's max_position_embeddings "
            f"({config['max_position_embeddings']}).",
            hint=f"Use --sequence-length {config['max_position_embeddings']} or less.",
        )
    tp = spec.tensor_parallel_size
    if spec.target == "cpu" and tp != 1:
        raise ConfigError(
            f"--tensor-parallel-size {tp} applies to inf2 and cuda; the cpu target serves one unsharded copy.",
            hint="Drop --tensor-parallel-size for --target cpu.",
        )
    if (
        spec.target == "cuda" and shape.heads % tp
    ):  # vLLM's ModelConfig.verify_with_parallel_config refuses the same
        raise ConfigError(
            f"--tensor-parallel-size {tp} does not divide the model's {shape.heads} attention heads: vLLM refuses to "
            "shard it so.",
            hint="Use one that divides them: "
            + ", ".join(str(n) for n in range(1, 9) if shape.heads % n == 0)
            + " (up to the 8 GPUs of the largest instances).",
        )
    if spec.target == "inf2" and smallest_fit(shape, Served.of(spec)) is None:
        raise ConfigError(
            f"{shape.parameters / 1e9:.2f}B parameters at batch {spec.batch_size} x {spec.sequence_length} "
            f"tokens with tp {tp} fit no inf2 instance.",
            hint="Raise --tensor-parallel-size, or lower --batch-size / --sequence-length.",
        )


def _copy_weights(src: Path, out: Path, target: str) -> str:
    """cpu and cuda: the model's files as they are (no link out of the model directory); returns how it is served.
    cuda: vLLM loads the weights in the recorded dtype (SM_VLLM_DTYPE), no compile step."""
    names = inode_names(src)
    for f in sorted(src.iterdir()):
        if f.is_file() and f.name.endswith(MODEL_FILE_SUFFIXES) and f.name != "smneuron.json":
            shutil.copyfile(check_file(src, f, names=names), out / f.name)
    if target == "cuda":
        return "none: served by AWS's GPU vLLM image (weights as saved, loaded in the recorded dtype)"
    return "none: served by transformers (the local stand-in of the vLLM container)"


def export_versions(out: Path) -> dict[str, str]:
    """The versions optimum-neuron wrote into the export's neuron_config.json (NeuronConfig.to_dict): the container
    loads the export only with these very optimum-neuron and neuronx-cc versions (NeuronConfig.from_dict)."""
    try:
        config = json.loads((out / "neuron_config.json").read_text())
    except (OSError, ValueError):
        return {}
    found = {
        "optimum-neuron": config.get("optimum_neuron_version"),
        "neuronx-cc": config.get("neuronxcc_version"),
    }
    return {k: str(v) for k, v in found.items() if v}


def compile_from_cache(model_id: str, out_dir: str | Path, spec: CompileSpec) -> GenerationCompileResult:
    """An artifact that serves hub model ``model_id`` from the optimum-neuron cache (no weights shipped):
    the endpoint sets SM_ON_MODEL to the hub id and the container fetches the cached compiled model.

    Raises:
        MissingDependencyError: optimum-neuron is not installed (the lookup is its own).
        ConfigError: the cache has no entry for exactly this batch / sequence / tp / dtype (lists those it has).
    """
    started = time.monotonic()
    _require_optimum_neuron("Looking up the optimum-neuron cache")
    import transformers
    from optimum.neuron.cache.hub_cache import select_hub_cached_entries

    wanted = (spec.batch_size, spec.sequence_length, spec.tensor_parallel_size, TORCH_DTYPES[spec.dtype])
    entries = select_hub_cached_entries(model_id, task="text-generation", instance_type="inf2")
    found = sorted(
        {
            (
                int(e["batch_size"]),
                int(e["sequence_length"]),
                int(e.get("tp_degree", e.get("tensor_parallel_size", 0))),
                str(e.get("torch_dtype", e.get("dtype"))).replace("torch.", ""),
            )
            for e in entries
        }
    )
    if wanted not in found:
        listed = "; ".join(
            f"--batch-size {b} --sequence-length {s} --tensor-parallel-size {t} ({d})" for b, s, t, d in found
        )
        raise ConfigError(
            f"The optimum-neuron cache has no inf2 entry for {model_id} at batch {wanted[0]}, sequence {wanted[1]}, "
            f"tp {wanted[2]}, {wanted[3]}.",
            hint=(f"Cached: {listed}." if found else "It has no inf2 entry for this model at all.")
            + " Pick one of those, or compile the model yourself (`smneuron compile MODEL_DIR --target inf2`).",
        )
    config = transformers.AutoConfig.from_pretrained(model_id).to_dict()
    shape = ModelShape.from_config(config)
    out = Path(out_dir)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / "config.json").write_text(json.dumps(config, indent=2, default=str))
    manifest = _manifest(
        shape,
        spec,
        source=model_id,
        target="inf2",
        function="optimum-neuron cache",
        args=[],
        files={"config.json": sha256_file(out / "config.json")},
        source_sha=model_id,
        hub_model_id=model_id,
    )
    manifest.write(out)
    note = f"serving {model_id} from the optimum-neuron cache: the endpoint downloads it (set HF_TOKEN for gated models)"
    return GenerationCompileResult(out, manifest, time.monotonic() - started, [], [note])


def _manifest(
    shape: ModelShape,
    spec: CompileSpec,
    *,
    source: str,
    target: str,
    function: str,
    args: list[str],
    files: dict[str, str],
    source_sha: str,
    hub_model_id: str | None = None,
    exported: dict[str, str] | None = None,
) -> GenerationManifest:
    return GenerationManifest(
        smneuron_version=__version__,
        model_type=shape.model_type,
        generation=Generation(
            batch_size=spec.batch_size,
            sequence_length=spec.sequence_length,
            tensor_parallel_size=spec.tensor_parallel_size,
            dtype=spec.dtype,
            num_parameters=shape.parameters,
            source=source,
            hub_model_id=hub_model_id,
        ),
        compiler=Compiler(
            target=target, function=function, args=args, cores_per_model=spec.tensor_parallel_size
        ),
        # the export's own record wins: it is what the container checks
        versions={**_versions(), **(exported or {})},
        model_files=files,
        source_model_sha256=source_sha,
        created_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    )


def _require_optimum_neuron(purpose: str) -> None:
    if importlib.util.find_spec("optimum") is None or importlib.util.find_spec("optimum.neuron") is None:
        raise MissingDependencyError(
            "optimum-neuron",
            purpose,
            "optimum-neuron needs the Neuron SDK: run the compile in the optimum-neuron vLLM DLC, on an "
            "inf2/trn1 host (`pip install optimum-neuron[neuronx]`), or in smneuron's pipeline compile step; "
            "or use --target cpu to serve the model on this machine.",
        )


def _run_export(command: list[str]) -> None:
    _require_optimum_neuron("Compiling text generation for inf2")
    with step("optimum-cli export neuron") as shown:  # tens of minutes for large models: show it runs
        shown.update("compiling (minutes; the Neuron compiler gives no finer progress)")
        # in a folder of its own: `-m` puts the current folder first on sys.path (a project's secrets.py or random.py
        # would be imported in place of Python's), and the compiler leaves its work files where it runs
        with tempfile.TemporaryDirectory(prefix="smneuron-export-") as elsewhere:
            done = subprocess.run(command, capture_output=True, text=True, cwd=elsewhere)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise CompileError(
            f"optimum-cli export neuron failed (exit {done.returncode}):\n{tail}",
            hint="The arguments are in the message above; check the model is supported by optimum-neuron.",
        )


def _versions() -> dict[str, str]:
    out = {}
    for dist in ("optimum-neuron", "neuronx-cc", "torch-neuronx", "transformers", "torch"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out
