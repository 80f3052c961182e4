"""Capacity arithmetic for text generation on Neuron and GPUs: does a (batch, sequence, tp, dtype) layout fit?

No I/O and no AWS call: ``--dry-run`` shows it, and deploy refuses an impossible layout before anything
is uploaded. Head sharding follows optimum-neuron's own rule (``get_shardable_head_counts`` in
optimum/neuron/models/inference/backend/modules/attention/gqa.py): query heads are padded to a multiple
of tp; K/V heads are replicated up to tp when tp is a multiple of them, otherwise converted to one K/V
head per (padded) query head. The KV cache is sized from the result, since that is what the export
allocates.

On a GPU (AWS's vLLM image) a copy is sharded over ``tp`` GPUs; vLLM takes ``gpu_memory_utilization`` (0.9, its
default) of each GPU for the weights and a paged KV cache, refuses to start when not even one sequence of
``max_model_len`` tokens fits beside the weights, and refuses a tp that does not divide the attention heads
(vllm/config: ModelConfig.verify_with_parallel_config); K/V heads fewer than tp are replicated (one per GPU).

One module because the Neuron, GPU and CPU arithmetic share one record (``Capacity``), its words, and the refusal
that says, across families, where a model that does not fit would fit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from smneuron.catalog import INSTANCE_TYPES, InstanceType
from smneuron.catalog.generation import GPU_MEMORY_UTILIZATION, HBM_PER_CORE_GIB, HBM_USABLE, HOST_USABLE
from smneuron.catalog.prices import PriceTable, price_table
from smneuron.errors import ConfigError

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
GIB = 2**30


@dataclass(frozen=True)
class ModelShape:
    """What the arithmetic needs from config.json."""

    model_type: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    intermediate: int
    tied_embeddings: bool
    parameters: int  # counted from the shapes (or read from the checkpoint when known)

    @classmethod
    def from_config(cls, config: dict, parameters: int | None = None) -> ModelShape:
        """Read a decoder's shape from its Hugging Face config.json.

        Raises:
            ConfigError: a config without the fields of a decoder (layers, heads, hidden size).
        """
        try:
            hidden = int(config["hidden_size"])
            heads = int(config["num_attention_heads"])
            layers = int(config["num_hidden_layers"])
        except (KeyError, TypeError, ValueError):
            raise ConfigError(
                "config.json lacks hidden_size / num_attention_heads / num_hidden_layers: not a decoder "
                "smneuron can size.",
                hint="Text generation needs a causal LM (Llama, Qwen, Mistral, ...) saved with save_pretrained.",
            ) from None
        kv = int(config.get("num_key_value_heads") or heads)
        head_dim = int(config.get("head_dim") or hidden // heads)
        vocab = int(config.get("vocab_size", 32000))
        inter = int(config.get("intermediate_size") or 4 * hidden)
        tied = bool(config.get("tie_word_embeddings", False))
        per_layer = (
            hidden * heads * head_dim * 2 + hidden * kv * head_dim * 2 + 3 * hidden * inter + 2 * hidden
        )
        counted = layers * per_layer + vocab * hidden * (1 if tied else 2) + hidden
        return cls(
            str(config.get("model_type", "")),
            layers,
            hidden,
            heads,
            kv,
            head_dim,
            vocab,
            inter,
            tied,
            parameters or counted,
        )


def sharded_heads(tp: int, heads: int, kv_heads: int) -> tuple[int, int, str]:
    """(query heads, K/V heads, strategy) after optimum-neuron shards a model over ``tp`` cores."""
    q = heads + (tp - heads % tp) % tp
    if heads == kv_heads:
        return q, q, "mha"
    if kv_heads < tp or kv_heads % tp:
        if tp % kv_heads == 0:
            return q, tp, "replicate-to-tp-degree"
        return q, q, "convert-to-mha"
    return q, kv_heads, "shard"


@dataclass(frozen=True)
class Served:
    """How one copy of a causal LM is served: its compiled batch size, sequence length, dtype and tensor-parallel size,
    the bundle that travels together from the compile to the manifest, the capacity arithmetic and the plan.
    ``tensor_parallel_size`` None: any (``smallest_fit`` tries each)."""

    batch_size: int
    sequence_length: int
    dtype: str
    tensor_parallel_size: int | None = None

    @classmethod
    def of(cls, thing: Any, *, pinned: bool = True) -> Served:
        """From anything that carries the four (a CompileSpec, an artifact's generation section, a Capacity);
        ``pinned`` False leaves the tensor-parallel size open."""
        tp = thing.tensor_parallel_size if pinned else None
        return cls(thing.batch_size, thing.sequence_length, thing.dtype, tp)


@dataclass
class Capacity:
    """The arithmetic for one layout on one instance; ``problems`` empty when it fits."""

    instance: str
    tensor_parallel_size: int
    batch_size: int
    sequence_length: int
    dtype: str
    copies: int
    idle_cores: int
    weights_gib: float
    weights_per_core_gib: float
    kv_cache_per_core_gib: float
    need_per_core_gib: float
    hbm_per_core_gib: float
    host_need_gib: float
    host_gib: float
    kv_heads: int
    head_strategy: str
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    device: str = "NeuronCore"  # what a copy is sharded over: NeuronCore or GPU

    @property
    def usable(self) -> float:
        """GiB of each device the weights and KV cache may take."""
        return self.hbm_per_core_gib * (GPU_MEMORY_UTILIZATION if self.device == "GPU" else HBM_USABLE)

    @property
    def fits(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {**asdict(self), "fits": self.fits}

    def lines(self) -> list[str]:
        """The arithmetic, in words, for --dry-run and for refusals (host memory only on a CPU instance: it has
        no NeuronCores and no HBM to count)."""
        if not self.hbm_per_core_gib:
            plural = "copy" if self.copies == 1 else "copies"
            return [
                f"weights {self.weights_gib:.2f} GiB ({self.dtype}) per copy",
                f"host memory {self.host_need_gib:.1f} GiB for {self.copies} {plural} of the weights, of "
                f"{self.host_gib * HOST_USABLE:.1f} usable ({self.host_gib} GiB x {HOST_USABLE})",
                f"copies = {self.copies} (one per 2 vCPUs of {self.instance})",
            ]
        d = self.device
        memory = (
            f"{self.hbm_per_core_gib:g} GiB x {GPU_MEMORY_UTILIZATION}, vLLM's gpu_memory_utilization"
            if d == "GPU"
            else f"{self.hbm_per_core_gib} GiB HBM x {HBM_USABLE}"
        )
        lines = [
            f"weights {self.weights_gib:.2f} GiB ({self.dtype}) / tp {self.tensor_parallel_size} = "
            f"{self.weights_per_core_gib:.2f} GiB per {d}",
            f"KV cache {self.batch_size} x {self.sequence_length} tokens ({self.kv_heads} K/V heads, "
            f"{self.head_strategy}) = {self.kv_cache_per_core_gib:.2f} GiB per {d}",
            f"per {d} {self.need_per_core_gib:.2f} GiB of {self.usable:.1f} usable ({memory})",
        ]
        host = [
            f"host memory {self.host_need_gib:.1f} GiB for {self.copies} {'copy' if self.copies == 1 else 'copies'} of the weights, of "
            f"{self.host_gib * HOST_USABLE:.1f} usable ({self.host_gib} GiB x {HOST_USABLE})",
        ]
        copies = [f"copies = {self.copies} ({self.idle_cores} {d}s idle)"]
        return (
            lines + (host if d == "NeuronCore" else []) + copies
        )  # vLLM on a GPU maps the weights, not copies them


def _record(
    instance: InstanceType,
    layout: tuple[int, int, int, str, int],
    idle: int,
    weights: float,
    kv: float,
    per_device_gib: float,
    kv_heads: int,
    strategy: str,
    device: str = "NeuronCore",
) -> Capacity:
    """The Capacity of (tp, batch, sequence, dtype, copies) with ``weights`` and ``kv`` bytes over tp devices."""
    tp, batch_size, sequence_length, dtype, n = layout
    return Capacity(
        instance.name,
        tp,
        batch_size,
        sequence_length,
        dtype,
        n,
        idle,
        round(weights / GIB, 3),
        round(weights / tp / GIB, 3),
        round(kv / tp / GIB, 3),
        round((weights + kv) / tp / GIB, 3),
        per_device_gib,
        round(n * weights / GIB, 2),
        instance.memory_gib,
        kv_heads,
        strategy,
        device=device,
    )


def capacity(
    shape: ModelShape,
    instance: InstanceType,
    *,
    batch_size: int,
    sequence_length: int,
    tensor_parallel_size: int,
    dtype: str,
    copies: int | None = None,
) -> Capacity:
    """Fit ``shape`` in (batch, sequence, tp, dtype) on ``instance``; copies default to cores (GPUs) // tp."""
    if instance.family == "gpu":
        return _gpu_capacity(
            shape, instance, (tensor_parallel_size, batch_size, sequence_length, dtype, copies)
        )
    tp = tensor_parallel_size
    nbytes = DTYPE_BYTES[dtype]
    cores = instance.neuron_cores
    fit_copies = cores // tp if cores else 0
    n = copies if copies is not None else max(fit_copies, 1)
    _, kv_heads, strategy = sharded_heads(tp, shape.heads, shape.kv_heads)
    weights = shape.parameters * nbytes
    kv = 2 * shape.layers * batch_size * sequence_length * kv_heads * shape.head_dim * nbytes
    per_core = (weights + kv) / tp / GIB
    c = _record(
        instance, (tp, batch_size, sequence_length, dtype, n), max(cores - n * tp, 0), weights, kv,
        HBM_PER_CORE_GIB if instance.family == "inf2" else 0.0,  # a CPU instance has no HBM to count
        kv_heads, strategy,
    )  # fmt: skip
    if instance.family != "inf2":
        c.problems.append(
            f"{instance.name} has no NeuronCore-v2: smneuron serves text generation on ml.inf2.* (optimum-neuron)."
        )
        return c
    if tp > cores:
        c.problems.append(f"tp {tp} needs {tp} NeuronCores; {instance.name} has {cores}.")
    elif copies is not None and copies > fit_copies:
        c.problems.append(
            f"{copies} copies of tp {tp} need {copies * tp} NeuronCores; {instance.name} has {cores}."
        )
    if per_core > HBM_PER_CORE_GIB * HBM_USABLE:
        c.problems.append(
            f"one copy needs {per_core:.2f} GiB per NeuronCore (weights + KV cache); a NeuronCore-v2 has "
            f"{HBM_PER_CORE_GIB} GiB, {HBM_PER_CORE_GIB * HBM_USABLE:.1f} usable."
        )
    if c.host_need_gib > instance.memory_gib * HOST_USABLE:
        c.problems.append(
            f"loading {n} {'copy' if n == 1 else 'copies'} of {weights / GIB:.1f} GiB of weights needs {c.host_need_gib:.1f} GiB of host "
            f"memory; {instance.name} has {instance.memory_gib} GiB."
        )
    if strategy == "convert-to-mha":
        c.notes.append(
            f"tp {tp} is not a multiple of the {shape.kv_heads} K/V heads: optimum-neuron converts to one K/V "
            f"head per query head ({kv_heads}), a larger KV cache; a tp that divides or is divided by "
            f"{shape.kv_heads} avoids it."
        )
    if c.idle_cores and c.fits:
        c.notes.append(f"{c.idle_cores} of {cores} NeuronCores stay idle with tp {tp}.")
    return c


# GPUs without bf16 (compute capability below 8.0: torch.cuda.is_bf16_supported() is False on them)
NO_BF16 = ("NVIDIA T4", "NVIDIA V100", "NVIDIA K80")


def _gpu_capacity(
    shape: ModelShape, instance: InstanceType, asked: tuple[int, int, int, str, int | None]
) -> Capacity:
    """The arithmetic on a GPU type: weights + paged KV cache per GPU under vLLM's memory share, for ``asked``
    (tp, batch, sequence, dtype, copies or None as capacity() takes them)."""
    tp, batch_size, sequence_length, dtype, copies = asked
    nbytes, gpus = DTYPE_BYTES[dtype], instance.gpus
    per_gpu = instance.accelerator_memory_gib / gpus if gpus else 0.0
    fit = gpus // tp if gpus else 0
    n = copies if copies is not None else max(fit, 1)
    kv_heads = max(shape.kv_heads, tp)  # vLLM replicates K/V heads fewer than tp, one per GPU
    weights = shape.parameters * nbytes
    kv = 2 * shape.layers * batch_size * sequence_length * kv_heads * shape.head_dim * nbytes
    c = _record(
        instance, (tp, batch_size, sequence_length, dtype, n), max(gpus - n * tp, 0), weights, kv, round(per_gpu, 3),
        kv_heads, "replicated to tp" if kv_heads > shape.kv_heads else "shard", device="GPU",
    )  # fmt: skip
    if not gpus:
        c.problems.append(f"smneuron's catalog does not know the GPUs of {instance.name} (count and memory).")
        return c
    if tp > gpus:
        c.problems.append(f"tp {tp} needs {tp} GPUs; {instance.name} has {gpus}.")
    elif copies is not None and copies > fit:
        c.problems.append(f"{copies} copies of tp {tp} need {copies * tp} GPUs; {instance.name} has {gpus}.")
    if shape.heads % tp:
        c.problems.append(
            f"tp {tp} does not divide the {shape.heads} attention heads (vLLM refuses to start)."
        )
    if dtype == "bf16" and instance.accelerator in NO_BF16:
        c.problems.append(
            f"the {instance.accelerator} has no bf16 (compute capability below 8.0): compile with --dtype fp16."
        )
    one_sequence = (weights + kv / batch_size) / tp / GIB
    if one_sequence > c.usable:
        c.problems.append(
            f"one copy needs {one_sequence:.2f} GiB per GPU for its weights and one {sequence_length}-token sequence of "
            f"KV cache; the {instance.accelerator} has {per_gpu:g} GiB, {c.usable:.1f} usable (vLLM refuses to start)."
        )
    elif c.need_per_core_gib > c.usable:
        at_once = int((c.usable - weights / tp / GIB) / (kv / batch_size / tp / GIB))
        c.notes.append(
            f"the KV cache of {batch_size} full {sequence_length}-token sequences does not fit beside the weights on "
            f"{instance.name}: vLLM holds about {at_once} at full length and preempts the rest (lower --batch-size, or "
            "raise --tensor-parallel-size)."
        )
    # host memory is not counted: vLLM streams safetensors weights to the GPU through a memory map
    if c.idle_cores and c.fits:
        c.notes.append(f"{c.idle_cores} of {gpus} GPUs stay idle with tp {tp}.")
    return c


def smallest_fit(
    shape: ModelShape,
    served: Served,
    *,
    family: str = "inf2",
    excluding: str | None = None,
    prices: PriceTable | Mapping[str, float] | None = None,
) -> Capacity | None:
    """The cheapest instance of ``family`` (inf2 or gpu; and tp, when not pinned) where one copy fits, other than
    ``excluding``; cheapest by ``prices`` (the catalog's, with overrides)."""
    prices = price_table(prices)
    found = []
    for inst in INSTANCE_TYPES.values():
        if inst.family != family or "endpoint" not in inst.uses or inst.name == excluding:
            continue
        devices = inst.gpus if family == "gpu" else inst.neuron_cores
        for tp in [served.tensor_parallel_size] if served.tensor_parallel_size else [1, 2, 4, 8, 12, 24]:
            if tp > devices:
                continue
            c = capacity(shape, inst, batch_size=served.batch_size, sequence_length=served.sequence_length,
                         tensor_parallel_size=tp, dtype=served.dtype, copies=1)  # fmt: skip
            if c.fits:
                found.append((prices.hourly(inst.name) or float("inf"), devices, tp, c))
    return min(found, key=lambda f: f[:3])[3] if found else None


def cpu_fit(
    shape: ModelShape,
    *,
    batch_size: int,
    sequence_length: int,
    prices: PriceTable | Mapping[str, float] | None = None,
) -> tuple[str, float] | None:
    """(the cheapest CPU endpoint type whose usable memory holds one copy, GiB needed), or None: smneuron's CPU target
    serves fp32 weights and KV cache (the vLLM container's stand-in and vLLM on CPU load float32)."""
    need = (
        shape.parameters * 4
        + 2 * shape.layers * batch_size * sequence_length * shape.kv_heads * shape.head_dim * 4
    )
    prices = price_table(prices)
    fits = [
        (prices.hourly(i.name) or float("inf"), i.memory_gib, i.name)
        for i in INSTANCE_TYPES.values()
        if i.family == "cpu" and "endpoint" in i.uses and i.memory_gib * HOST_USABLE >= need / GIB
    ]
    return (min(fits)[2], need / GIB) if fits else None


def check(c: Capacity, shape: ModelShape, prices: PriceTable | Mapping[str, float] | None = None) -> None:
    """Refuse a layout that does not fit, with the arithmetic and the smallest instance that fits.

    Raises:
        ConfigError: the layout does not fit.
    """
    if c.fits:
        return
    family = INSTANCE_TYPES[c.instance].family
    same = smallest_fit(shape, Served.of(c), family=family, prices=prices)
    best = smallest_fit(shape, Served.of(c, pinned=False), family=family, prices=prices)
    where = []
    if same:
        where.append(
            f"As compiled (tp {c.tensor_parallel_size}), the smallest instance that fits is {same.instance}."
        )
    if best and (same is None or best.instance != same.instance):
        where.append(
            f"Recompiled with --tensor-parallel-size {best.tensor_parallel_size}, {best.instance} fits "
            f"({best.need_per_core_gib:.2f} GiB per {best.device})."
        )
    if not where:
        where.append(
            f"No {family} instance holds this model at this batch size and sequence length: recompile with a lower "
            "--batch-size or --sequence-length."
        )
        gpu = (
            smallest_fit(shape, Served.of(c, pinned=False), family="gpu", prices=prices)
            if family != "gpu"
            else None
        )
        if gpu:  # the way forward where inf2 (and trn1: the same container and HBM) cannot hold it
            where.append(
                f"Or serve it on a GPU: {gpu.instance} holds one copy at tp {gpu.tensor_parallel_size} "
                f"({gpu.need_per_core_gib:.1f} GiB per GPU; `smneuron compile MODEL --target cuda --tensor-parallel-size "
                f"{gpu.tensor_parallel_size}`, then --instance {gpu.instance})."
            )
        cpu = cpu_fit(shape, batch_size=c.batch_size, sequence_length=c.sequence_length, prices=prices)
        if cpu:
            where.append(
                f"Or serve it on CPU: {cpu[0]} holds one fp32 copy ({cpu[1]:.0f} GiB of weights and KV cache; "
                f"`smneuron compile MODEL --target cpu`, then --instance {cpu[0]})."
            )
    raise ConfigError(
        f"{shape.parameters / 1e9:.2f}B parameters at batch {c.batch_size} x sequence {c.sequence_length}, tp "
        f"{c.tensor_parallel_size}, {c.dtype} does not fit on {c.instance}: "
        + " ".join(c.problems)
        + " Arithmetic: "
        + "; ".join(c.lines())
        + ".",
        hint=" ".join(where),
    )
