"""Per-task model loading and the traceable wrappers: plain tensors in, plain tensors out.

Every traced file takes ``(input_ids, attention_mask[, token_type_ids])`` of shape
``[batch, seq_len]`` and returns one tensor:

- text-classification: logits ``[batch, num_labels]``
- feature-extraction: pooled (not normalised) embeddings ``[batch, hidden]``
- token-classification: logits ``[batch, seq_len, num_labels]``
- question-answering: start/end logits stacked ``[batch, seq_len, 2]``
"""

from __future__ import annotations

import inspect
import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smneuron.artifact.kind import ENCODER, GENERATION, model_kind
from smneuron.errors import CompileError, ConfigError, MissingDependencyError

OUTPUTS = {
    "text-classification": "logits[batch, num_labels]",
    "feature-extraction": "pooled_embeddings[batch, hidden] (not normalised)",
    "token-classification": "logits[batch, seq_len, num_labels]",
    "question-answering": "start_end_logits[batch, seq_len, 2]",
}
SAMPLE_TEXTS = [
    "The movie was great and I loved it.",
    "Paris is the capital of France.",
    "What a terrible, awful book.",
    "John works at Google in London.",
    "Where does Mary live?",
    "It is sunny today, tomorrow it will be rainy.",
    "this",
    "They founded the company in Berlin that year, and it grew very fast in Germany and France.",
]


def require_torch(purpose: str = "Compiling") -> Any:
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as e:
        raise MissingDependencyError(
            e.name or "torch",
            purpose,
            "Install the compile extra: `pip install torch==2.13.0` (CPU build) then "
            "`pip install 'smneuron[compile]'`.",
        ) from e
    return torch


@dataclass
class LoadedModel:
    module: Any  # the wrapper nn.Module to trace
    task: str
    config: Any
    input_names: list[str]
    labels: dict[str, str] | None
    problem_type: str | None
    pooling: str | None
    normalize: bool
    pad_token_id: int


def sentence_transformers_pooling(model_dir: Path) -> tuple[str | None, bool]:
    """(pooling, normalize) declared by a sentence-transformers layout, if the model has one."""
    pooling = None
    cfg = model_dir / "1_Pooling" / "config.json"
    if cfg.is_file():
        data = json.loads(cfg.read_text())
        if data.get("pooling_mode_cls_token"):
            pooling = "cls"
        elif data.get("pooling_mode_max_tokens"):
            pooling = "max"
        elif data.get("pooling_mode_mean_tokens"):
            pooling = "mean"
    normalize = False
    modules = model_dir / "modules.json"
    if modules.is_file():
        normalize = any(m.get("type", "").endswith("Normalize") for m in json.loads(modules.read_text()))
    return pooling, normalize


def load(
    model_dir: Path,
    task: str,
    *,
    pooling: str = "auto",
    normalize: bool | None = None,
    allow_random_weights: bool = False,
    precision: str | None = None,
) -> LoadedModel:
    """Load a save_pretrained model for ``task`` and wrap it for tracing.

    Raises:
        CompileError: the directory is not a loadable model for this task, or it lacks weights the task's head
            needs (random: refused unless ``allow_random_weights``).

    ``precision`` (the cuda target): the model in that dtype, taking its attention mask prepared outside
    (additive, 4-D): transformers' own mask code creates tensors on the tracing device, which a graph traced here
    would keep pinned to the CPU.
    """
    torch = require_torch()
    hf = _from_pretrained(model_dir, task, allow_random_weights)
    config = hf.config
    accepted = inspect.signature(hf.forward).parameters
    input_names = ["input_ids", "attention_mask"]
    if "token_type_ids" in accepted and getattr(config, "type_vocab_size", 0) > 1:
        input_names.append("token_type_ids")

    declared_pooling, declared_norm = sentence_transformers_pooling(model_dir)
    pool = None
    if task == "feature-extraction":
        pool = (declared_pooling or "mean") if pooling == "auto" else pooling
    labels = None
    if task in ("text-classification", "token-classification"):
        labels = {str(k): str(v) for k, v in config.id2label.items()}
    pad = config.pad_token_id if getattr(config, "pad_token_id", None) is not None else 0

    mask_dtype = None
    if precision is not None:
        mask_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[precision]
        hf = hf.to(mask_dtype)
    wrapper = _wrapper_class()(hf, task, pool, len(input_names) == 3, mask_dtype)
    torch.set_grad_enabled(False)
    return LoadedModel(
        module=wrapper,
        task=task,
        config=config,
        input_names=input_names,
        labels=labels,
        problem_type=getattr(config, "problem_type", None) if labels else None,
        pooling=pool,
        normalize=(declared_norm if normalize is None else normalize)
        if task == "feature-extraction"
        else False,
        pad_token_id=int(pad),
    )


def _from_pretrained(model_dir: Path, task: str, allow_random_weights: bool) -> Any:
    """The model for ``task`` in eval mode, eager attention (it traces to the same graph on every backend: no SDPA
    kernels on Neuron).

    Raises:
        CompileError: not loadable (a truncated or foreign weights file fails in safetensors or torch.load), or a
            head without weights unless ``allow_random_weights``.
    """
    import transformers

    transformers.logging.set_verbosity_error()  # their advice is for training; ours comes from smneuron
    transformers.utils.logging.disable_progress_bar()
    auto = {
        "text-classification": transformers.AutoModelForSequenceClassification,
        "feature-extraction": transformers.AutoModel,
        "token-classification": transformers.AutoModelForTokenClassification,
        "question-answering": transformers.AutoModelForQuestionAnswering,
    }[task]
    loading = (
        OSError,
        ValueError,
        KeyError,
        EOFError,
        RuntimeError,
        pickle.UnpicklingError,
        *_weights_errors(),
    )
    try:
        hf, info = auto.from_pretrained(str(model_dir), attn_implementation="eager", output_loading_info=True)
    except loading as e:
        raise CompileError(
            f"Cannot load {model_dir} as a {task} model: {type(e).__name__}: {str(e).rstrip('.')}.",
            hint="Check that the directory is what save_pretrained wrote, with its weights files whole "
            "(compare their sizes with the source).",
        ) from e
    missing = sorted(info.get("missing_keys") or [])
    if missing and not allow_random_weights:
        shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
        raise CompileError(
            f"{model_dir} has no weights for {shown}: loaded as a {task} model, "
            f"{'its head would be' if task != 'feature-extraction' else 'those would be'} random and every "
            "answer meaningless (the checkpoint was not trained for this task).",
            hint="Compile the checkpoint for the task it was trained for (e.g. --task feature-extraction for a "
            "sentence-embedding model), fine-tune and save the head first, or pass --allow-random-weights "
            "(tests, benchmarks) to compile it anyway.",
        )
    return hf.eval()


def _weights_errors() -> tuple[type[BaseException], ...]:
    """safetensors' own error, when safetensors is there (transformers loads .safetensors files with it)."""
    try:
        from safetensors import SafetensorError
    except ImportError:
        return ()
    return (SafetensorError,)


def _make_wrapper_class() -> type:
    import torch

    class Wrapper(torch.nn.Module):
        """Fixes the positional signature and turns HF outputs into one plain tensor."""

        def __init__(
            self, model: Any, task: str, pooling: str | None, with_token_types: bool, mask_dtype: Any = None
        ) -> None:
            super().__init__()
            self.model = model
            self.task = task
            self.pooling = pooling
            self.with_token_types = with_token_types
            self.mask_dtype = mask_dtype

        def forward(self, input_ids, attention_mask, token_type_ids=None):  # type: ignore[no-untyped-def]
            mask = attention_mask
            if self.mask_dtype is not None:  # additive 4-D mask: no device-pinned mask code in the graph
                keep = attention_mask[:, None, None, :].to(self.mask_dtype)
                mask = (1.0 - keep) * torch.finfo(self.mask_dtype).min
            kwargs = {"input_ids": input_ids, "attention_mask": mask}
            if self.with_token_types:
                kwargs["token_type_ids"] = token_type_ids
            out = self.model(**kwargs)
            if self.task == "question-answering":
                return torch.stack([out[0], out[1]], dim=-1)
            if self.task != "feature-extraction":
                return out[0]
            hidden = out[0]
            if self.pooling == "cls":
                return hidden[:, 0]
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            if self.pooling == "max":
                return (hidden + (mask - 1.0) * 1e9).max(dim=1).values
            return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)

    return Wrapper


def sample_batch(
    tokenizer_path: Path,
    task: str,
    batch_size: int,
    seq_len: int,
    pad_id: int,
    input_names: list[str],
    offset: int = 0,
) -> tuple:
    """Realistic example inputs ``[batch_size, seq_len]`` with mixed lengths.

    ``offset`` picks other texts: validation uses a different batch than tracing, so a mask or
    length that tracing baked in as a constant shows up as a difference.
    """
    import torch
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_path))
    tok.no_padding()
    tok.enable_truncation(
        seq_len, strategy="only_second" if task == "question-answering" else "longest_first"
    )
    texts = [SAMPLE_TEXTS[(i + offset) % len(SAMPLE_TEXTS)] for i in range(batch_size)]
    if task == "question-answering":
        encs = tok.encode_batch([(SAMPLE_TEXTS[4], t) for t in texts])
    else:
        encs = tok.encode_batch(texts)
    ids = torch.full((batch_size, seq_len), pad_id, dtype=torch.long)
    mask = torch.zeros((batch_size, seq_len), dtype=torch.long)
    types = torch.zeros((batch_size, seq_len), dtype=torch.long)
    for i, e in enumerate(encs):
        n = len(e.ids)
        ids[i, :n] = torch.tensor(e.ids)
        mask[i, :n] = 1
        types[i, :n] = torch.tensor(e.type_ids)
    return (ids, mask, types) if len(input_names) == 3 else (ids, mask)


TASKS = ("text-classification", "feature-extraction", "token-classification", "question-answering")
_HEADS = {
    "ForSequenceClassification": "text-classification",
    "ForTokenClassification": "token-classification",
    "ForQuestionAnswering": "question-answering",
}


def infer_task(model_dir: Path) -> tuple[str, str]:
    """The task a model directory was saved for, and why: from ``config.json`` ``architectures``
    (``BertForSequenceClassification`` -> text-classification, ...), a base model (``BertModel``) or a
    sentence-transformers layout -> feature-extraction.

    Raises:
        ConfigError: no architecture to go by, or a head smneuron does not serve (masked LM, ...),
            listing the tasks to choose from with ``--task``.
    """

    try:
        config = json.loads((model_dir / "config.json").read_text())
    except (OSError, ValueError):
        config = {}
    archs = [str(a) for a in config.get("architectures") or []]
    for arch in archs:
        for suffix, task in _HEADS.items():
            if arch.endswith(suffix):
                return task, f"config.json architectures: {arch}"
    if (model_dir / "modules.json").is_file():
        return "feature-extraction", "a sentence-transformers model (modules.json)"
    base = [a for a in archs if a.endswith("Model") and "For" not in a]
    if base:
        return "feature-extraction", f"config.json architectures: {base[0]} (a base model, no task head)"
    what = f"its architectures are {', '.join(archs)}" if archs else "config.json names no architectures"
    raise ConfigError(
        f"Cannot tell which task {model_dir} is for: {what}.",
        hint=f"Pass --task with one of: {', '.join(TASKS)}, text-generation (causal LMs) "
        "(or set compile.task in smneuron.yaml).",
    )


_WRAPPER: type | None = None


def _wrapper_class() -> type:
    """The wrapper nn.Module class, defined on first use so importing this module needs no torch."""
    global _WRAPPER
    if _WRAPPER is None:
        _WRAPPER = _make_wrapper_class()
    return _WRAPPER


def pipeline_task(model_dir: Path) -> tuple[str, str]:
    """The task of a model directory for the pipeline, which runs both kinds: the kind as ``artifact.kind.model_kind``
    decides it (a causal LM: text-generation), an encoder's task as ``infer_task`` reads it."""
    kind, note = model_kind(model_dir, None)
    return _TASK_OF[kind](model_dir, note)


def write_sample_records(path: str | Path, task: str) -> Path:
    """A small evaluation JSONL of sample texts shaped for ``task`` (pairs for question-answering),
    for local pipeline runs without data of their own."""
    path = Path(path)
    rows = [{"inputs": [SAMPLE_TEXTS[0], t] if task == "question-answering" else t} for t in SAMPLE_TEXTS]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# each kind's task of a model directory (text generation has one task; an encoder's is read from its head)
_TASK_OF = {
    ENCODER: lambda model_dir, note: infer_task(model_dir),
    GENERATION: lambda model_dir, note: (
        str(GENERATION),
        note.removeprefix("task text-generation inferred from "),
    ),
}
