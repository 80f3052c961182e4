"""`smneuron compile`'s settings, each declared once: ``COMPILE``.

Every setting but the cache's is a key of smneuron.yaml's ``compile`` section, whose field gives its type, range,
default and help; the table adds its flag and keyword. ``compile_spec`` puts the settings given over the project's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from smneuron.specs.models import CompileSpec, field_at
from smneuron.specs.options import Option, Options
from smneuron.specs.validation import FLAGS_SOURCE, validate


def _key(keyword: str, flag: str, **more: Any) -> Option:
    return Option(keyword, flag, key=f"compile.{keyword}", **more)


COMPILE = Options(
    "compile",
    [
        _key("target", "--target", help="inf1, inf2, cuda (NVIDIA GPUs) or cpu (default inf2)."),
        _key(
            "task",
            "--task",
            help="text-classification, feature-extraction, token-classification, question-answering or "
            "text-generation (causal LMs: optimum-neuron for inf2); default: from config.json, said.",
        ),
        # an encoder's static shapes and a causal LM's sequence length left out are chosen from the model's config.json
        # (``compilation.shapes``), not the project-file field's default: what "not given" comes to is said so
        _key("batch_size", "--batch-size", default="chosen from the model's size class"),
        _key(
            "batch_sizes",
            "--batch-sizes",
            comma=True,
            help="Smaller batch sizes to compile too, e.g. 1,2,4.",
            default="1 beside the size class's batch; none when batch_size is given",
            kind="encoder",
        ),
        _key(
            "buckets",
            "--buckets",
            comma=True,
            help="Sequence lengths, e.g. 32,64,128.",
            default="32,64,128 within the model's positions",
            kind="encoder",
        ),  # fmt: skip
        _key("auto_cast", "--auto-cast", kind="encoder"),
        _key("auto_cast_type", "--auto-cast-type", kind="encoder"),
        _key("optlevel", "--optlevel", kind="encoder"),
        _key("fast_math", "--fast-math", comma=True, kind="encoder"),
        _key("neuroncore_pipeline_cores", "--neuroncore-pipeline-cores", kind="encoder"),
        _key(
            "compiler_args",
            "--compiler-arg",
            many=True,
            help="Extra compiler argument (repeat).",
            kind="encoder",
        ),
        _key("pooling", "--pooling", kind="encoder"),
        _key("normalize", "--normalize/--no-normalize", kind="encoder"),
        _key("precision", "--precision", kind="encoder"),
        _key("allow_random_weights", "--allow-random-weights"),
        _key("max_abs_diff", "--max-abs-diff", kind="encoder"),
        _key(
            "sequence_length",
            "--sequence-length",
            default="4096, fitted to the model's positions",
            kind="text-generation",
        ),
        _key("tensor_parallel_size", "--tensor-parallel-size", short="--num-cores", kind="text-generation"),
        _key("dtype", "--dtype", kind="text-generation"),
    ],
    model="CompileSettings",
    fields=field_at,
)
CompileSettings = COMPILE.model


def compile_spec(base: CompileSpec, settings: Mapping[str, Any], *, where: str = "sdk") -> CompileSpec:
    """``base`` (the project's ``compile`` section) with the settings given over it, each checked by the table.

    Raises:
        UsageError: a value out of range or of the wrong type, or a combination the spec refuses (batch sizes above
            the batch size), naming the flag or keyword.
    """
    given = COMPILE.parse(settings, where=where).given()
    # what the project file set and what was given stay told apart from the defaults (``model_fields_set``): a
    # default the compile may fit to the model (the sequence length) is not a choice it must keep
    data = {
        **base.model_dump(include=base.model_fields_set),
        **{k: v for k, v in given.items() if v is not None},
    }
    return validate(type(base), data, source=FLAGS_SOURCE)
