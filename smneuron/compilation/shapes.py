"""The static shapes an encoder is compiled to when the user chose none (issue 63 #1): batch sizes from the model's
size class, and sequence buckets that serve short texts cheaply.

A compile with no ``--batch-size``/``--batch-sizes``/``--buckets`` (and no ``--data``) used to trace one bucket of
128 tokens at batch 1: every request was a forward pass of its own, padded to 128. Now:

- **batch size** from the model's size class, the encoder stack's parameters counted from config.json
  (12 x layers x hidden^2, with the feed-forward width when config.json gives it). The prior is Neuron's published
  tables, at sequence length 128:
    - inf2 (awsdocs-neuron, about-neuron/benchmarks/inf2, throughput_data_encoder.csv, autocast matmult->bf16, data
      parallel on inf2.xlarge): distilbert's best throughput at batch 16, bert-base 2,674/s at batch 8 against
      1,998/s at batch 1, bert-large at batch 4.
    - inf1 ("Inf1 Inference Performance", Neuron 2.20, updated 2024-09-16): distilbert batch 16, bert-base batch 4-8
      (6 for bert-base-uncased on inf1.xlarge); no bert-large row, so the inf2 prior (4) stands, said.
    - cpu: all-MiniLM-L6-v2 measured here (benchmarks/default_compile.py, 2 cores): batch 8 served 117 req/s at
      concurrency 32, batch 16 98-104 (a CPU pass costs about its rows, and a bigger batch pads more); the small
      class takes 8, base and large the inf2 prior (not measured on cpu).
    - cuda has no published table: the inf2 prior.
- **batch 1 compiled beside it**: a partial batch runs on the smallest graph that fits (the handler does), so a lone
  request costs a batch-1 pass, not a padded full batch.
- **buckets** 32, 64 and 128 tokens, up to the model's positions: short texts (most queries and sentences) run on
  the short graphs.

That is 3 buckets x 2 batch sizes = 6 graphs: on Neuron targets each is a neuronx-cc / neuron-cc run (one process
each, in parallel), so the default stays at six rather than a full grid. Any shape the user gives wins, field by
field; the choice and its reason are said and recorded in the manifest (``Manifest.shapes``).

May import: smneuron.specs (its layer); nothing that loads a model.
"""

from __future__ import annotations

from dataclasses import dataclass

from smneuron.specs.models import CompileSpec
from smneuron.specs.validation import validate

SHAPE_FIELDS = ("batch_size", "batch_sizes", "buckets")
BUCKETS = (32, 64, 128)
GRAPHS_WHY = "each one a compiler run on Neuron targets, in parallel"

# size class -> (largest parameters of the encoder stack, batch size at sequence 128), per target; see the docstring
CLASSES: tuple[tuple[str, float], ...] = (("small", 60e6), ("base", 150e6), ("large", float("inf")))
BATCH: dict[str, dict[str, int]] = {
    "inf2": {"small": 16, "base": 8, "large": 4},
    "inf1": {"small": 16, "base": 6, "large": 4},
    "cpu": {"small": 8, "base": 8, "large": 4},
    "cuda": {"small": 16, "base": 8, "large": 4},
}
SOURCE: dict[str, str] = {
    "inf2": "Neuron's inf2 encoder table at sequence 128",
    "inf1": "Neuron's inf1 performance table at sequence 128 (large: the inf2 prior, inf1 lists none)",
    "cpu": "small: measured here, batch 8 beat 16 on cpu (benchmarks/default_compile.py); base, large: Neuron's inf2 "
    "table (no cpu table is published)",
    "cuda": "Neuron's inf2 table as the prior (no GPU table is published)",
}


@dataclass(frozen=True)
class ShapeChoice:
    """The batch sizes and buckets a compile uses, and why."""

    batch_size: int
    batch_sizes: list[int]
    buckets: list[int]
    reason: str

    @property
    def graphs(self) -> int:
        return len(self.buckets) * len(set(self.batch_sizes) | {self.batch_size})


def stack_parameters(config: dict) -> int:
    """The encoder stack's parameters from config.json's shapes (attention 4 x hidden^2 and the feed-forward
    2 x hidden x width per layer; embeddings left out: they cost memory, not time)."""
    hidden = int(config.get("hidden_size") or config.get("dim") or config.get("d_model") or 768)
    layers = int(config.get("num_hidden_layers") or config.get("n_layers") or config.get("num_layers") or 12)
    width = int(
        config.get("intermediate_size") or config.get("hidden_dim") or config.get("d_ff") or 4 * hidden
    )
    return layers * (4 * hidden * hidden + 2 * hidden * width)


def size_class(config: dict) -> tuple[str, int]:
    """``("small" | "base" | "large", parameters)`` of the model config.json describes."""
    params = stack_parameters(config)
    return next(name for name, top in CLASSES if params <= top), params


def default_shapes(config: dict, target: str, chosen: set[str]) -> ShapeChoice | None:
    """The shapes for the fields the user did not choose; ``None`` when they chose them all (nothing to say).

    ``chosen``: the shape fields given (flags, keywords, the project file, ``--data``'s buckets).
    """
    if set(SHAPE_FIELDS) <= chosen:
        return None
    name, params = size_class(config)
    positions = int(config.get("max_position_embeddings") or 512)
    top = min(128, positions)
    buckets = [b for b in BUCKETS if b < top] + [top]
    batch = BATCH[target][name]
    said = []
    if "batch_size" not in chosen:
        said.append(
            f"batch {batch} ({name} model, {params / 1e6:.0f}M parameters in its layers: {SOURCE[target]})"
        )
    if not {"batch_size", "batch_sizes"} & chosen:
        said.append("batch 1 beside it (a lone request runs unpadded)")
    if "buckets" not in chosen:
        said.append(f"buckets {','.join(map(str, buckets))} (short texts run on short graphs; up to "
                    f"{'the model' if top < 128 else '128'} tokens)")  # fmt: skip
    return ShapeChoice(batch, [1], buckets, "; ".join(said)) if said else None


def apply(spec: CompileSpec, config: dict, chosen: set[str]) -> tuple[CompileSpec, ShapeChoice | None]:
    """``spec`` with the default shapes in the fields not chosen (see the module's docstring)."""
    choice = default_shapes(config, spec.target, chosen)
    if choice is None:
        return spec, None
    update: dict = {}
    if "batch_size" not in chosen:
        update["batch_size"] = choice.batch_size
    if not {"batch_size", "batch_sizes"} & chosen:
        update["batch_sizes"] = [1] if choice.batch_size > 1 else None
    if "buckets" not in chosen:
        update["buckets"] = choice.buckets
    applied = validate(type(spec), {**spec.model_dump(), **update}, source="the default shapes")
    return applied, ShapeChoice(applied.batch_size, applied.all_batch_sizes, applied.buckets, choice.reason)


def fitted_sequence(spec: CompileSpec, config: dict, chosen: bool) -> tuple[CompileSpec, int | None]:
    """A causal LM's default sequence length, fitted to a model with fewer positions (config.json's
    max_position_embeddings); one the user chose is kept (and refused on export when the model cannot take it).
    Returns the spec and the positions it was fitted to (None: unchanged), for the caller to say with its own knob."""
    most = positions(config)
    if chosen or not most or spec.sequence_length <= most:
        return spec, None
    return spec.model_copy(update={"sequence_length": most}), most


def positions(config: dict) -> int:
    """The tokens a model takes (config.json's max_position_embeddings; 0 where it does not say)."""
    return int(config.get("max_position_embeddings") or 0)
