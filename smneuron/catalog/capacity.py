"""Capacity arithmetic for text generation on Neuron: does a (batch, sequence, tp, dtype) layout fit?

No I/O and no AWS call: ``--dry-run`` shows it, and deploy refuses an impossible layout before anything
is uploaded. Head sharding follows optimum-neuron's own rule (``get_shardable_head_counts`` in
optimum/neuron/models/inference/backend/modules/attention/gqa.py): query heads are padded to a multiple
of tp; K/V heads are replicated up to tp when tp is a multiple of them, otherwise converted to one K/V
head per (padded) query head. The KV cache is sized from the result, since that is what the export
allocates.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from smneuron.catalog import INSTANCE_TYPES, InstanceType, load_prices
from smneuron.catalog.generation import HBM_PER_CORE_GIB, HBM_USABLE, HOST_USABLE
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
        return [
            f"weights {self.weights_gib:.2f} GiB ({self.dtype}) / tp {self.tensor_parallel_size} = "
            f"{self.weights_per_core_gib:.2f} GiB per NeuronCore",
            f"KV cache {self.batch_size} x {self.sequence_length} tokens ({self.kv_heads} K/V heads, "
            f"{self.head_strategy}) = {self.kv_cache_per_core_gib:.2f} GiB per NeuronCore",
            f"per NeuronCore {self.need_per_core_gib:.2f} GiB of {self.hbm_per_core_gib * HBM_USABLE:.1f} usable "
            f"({self.hbm_per_core_gib} GiB HBM x {HBM_USABLE})",
            f"host memory {self.host_need_gib:.1f} GiB for {self.copies} {'copy' if self.copies == 1 else 'copies'} of the weights, of "
            f"{self.host_gib * HOST_USABLE:.1f} usable ({self.host_gib} GiB x {HOST_USABLE})",
            f"copies = {self.copies} ({self.idle_cores} NeuronCores idle)",
        ]


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
    """Fit ``shape`` in (batch, sequence, tp, dtype) on ``instance``; copies default to cores // tp."""
    tp = tensor_parallel_size
    nbytes = DTYPE_BYTES[dtype]
    cores = instance.neuron_cores
    fit_copies = cores // tp if cores else 0
    n = copies if copies is not None else max(fit_copies, 1)
    _, kv_heads, strategy = sharded_heads(tp, shape.heads, shape.kv_heads)
    weights = shape.parameters * nbytes
    kv = 2 * shape.layers * batch_size * sequence_length * kv_heads * shape.head_dim * nbytes
    per_core = (weights + kv) / tp / GIB
    c = Capacity(
        instance.name,
        tp,
        batch_size,
        sequence_length,
        dtype,
        n,
        max(cores - n * tp, 0),
        round(weights / GIB, 3),
        round(weights / tp / GIB, 3),
        round(kv / tp / GIB, 3),
        round(per_core, 3),
        HBM_PER_CORE_GIB if instance.family == "inf2" else 0.0,  # a CPU instance has no HBM to count
        round(n * weights / GIB, 2),
        instance.memory_gib,
        kv_heads,
        strategy,
    )
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


def smallest_fit(
    shape: ModelShape, *, batch_size: int, sequence_length: int, dtype: str, tensor_parallel_size: int | None
) -> Capacity | None:
    """The cheapest inf2 instance (and tp, when not pinned) where one copy fits."""
    prices = load_prices()
    found = []
    for inst in INSTANCE_TYPES.values():
        if inst.family != "inf2":
            continue
        for tp in [tensor_parallel_size] if tensor_parallel_size else [1, 2, 4, 8, 12, 24]:
            if tp > inst.neuron_cores:
                continue
            c = capacity(
                shape,
                inst,
                batch_size=batch_size,
                sequence_length=sequence_length,
                tensor_parallel_size=tp,
                dtype=dtype,
                copies=1,
            )
            if c.fits:
                found.append((prices.hourly(inst.name) or float("inf"), inst.neuron_cores, tp, c))
    return min(found, key=lambda f: f[:3])[3] if found else None


def cpu_fit(shape: ModelShape, *, batch_size: int, sequence_length: int) -> tuple[str, float] | None:
    """(the cheapest CPU endpoint type whose usable memory holds one copy, GiB needed), or None: smneuron's CPU target
    serves fp32 weights and KV cache (the vLLM container's stand-in and vLLM on CPU load float32)."""
    need = (
        shape.parameters * 4
        + 2 * shape.layers * batch_size * sequence_length * shape.kv_heads * shape.head_dim * 4
    )
    prices = load_prices()
    fits = [
        (prices.hourly(i.name) or float("inf"), i.memory_gib, i.name)
        for i in INSTANCE_TYPES.values()
        if i.family == "cpu" and "endpoint" in i.uses and i.memory_gib * HOST_USABLE >= need / GIB
    ]
    return (min(fits)[2], need / GIB) if fits else None


def check(c: Capacity, shape: ModelShape) -> None:
    """Refuse a layout that does not fit, with the arithmetic and the smallest instance that fits.

    Raises:
        ConfigError: the layout does not fit.
    """
    if c.fits:
        return
    same = smallest_fit(
        shape,
        batch_size=c.batch_size,
        sequence_length=c.sequence_length,
        dtype=c.dtype,
        tensor_parallel_size=c.tensor_parallel_size,
    )
    best = smallest_fit(
        shape,
        batch_size=c.batch_size,
        sequence_length=c.sequence_length,
        dtype=c.dtype,
        tensor_parallel_size=None,
    )
    where = []
    if same:
        where.append(
            f"As compiled (tp {c.tensor_parallel_size}), the smallest instance that fits is {same.instance}."
        )
    if best and (same is None or best.instance != same.instance):
        where.append(
            f"Recompiled with --tensor-parallel-size {best.tensor_parallel_size}, {best.instance} fits "
            f"({best.need_per_core_gib:.2f} GiB per NeuronCore)."
        )
    if not where:
        where.append(
            "No inf2 instance holds this model at this batch size and sequence length: recompile with a lower "
            "--batch-size or --sequence-length."
        )
        cpu = cpu_fit(shape, batch_size=c.batch_size, sequence_length=c.sequence_length)
        if cpu:  # the way forward where inf2 (and trn1: the same container and HBM) cannot hold it
            where.append(
                f"Or serve it on CPU: {cpu[0]} holds one fp32 copy ({cpu[1]:.0f} GiB of weights and KV cache; "
                f"`smneuron compile MODEL --target cpu`, then --instance {cpu[0]}). smneuron does not serve text "
                "generation on GPU types yet."
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
