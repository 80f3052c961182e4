"""The vLLM container's environment: ``SM_ON_*`` variables from the compiled configuration (inf2), ``SM_VLLM_*``
ones for AWS's GPU vLLM image (cuda), the TGI variables users migrate from, and the Hugging Face token (never
printed).

AWS's GPU image (aws/deep-learning-containers vllm/build_artifacts/sagemaker_entrypoint.sh) turns every
``SM_VLLM_<ARG>=value`` into ``--<arg> value`` of vLLM's OpenAI server: there batch size (--max-num-seqs) and
sequence length (--max-model-len) are runtime settings, not compiled ones, so a user's value wins (said in a note);
tp and dtype are the artifact's, since the capacity arithmetic is done with them.

The optimum-neuron vLLM DLC's entrypoint turns every ``SM_ON_<X>`` variable into
``optimum-cli neuron serve --<x>``; serve refuses to start when batch size, sequence length or tp
differ from the compiled model's (optimum/commands/neuron/serve.py), so smneuron sets all three from
``smneuron.json`` and refuses a mismatch before anything is created.
"""

from __future__ import annotations

import os

from smneuron.artifact.staging import GenerationConfig
from smneuron.errors import ConfigError

MODEL_DIR = "/opt/ml/model"
# TGI-neuronx variable -> (SM_ON_ variable, what it meant there)
TGI_VARIABLES = {
    "HF_MODEL_ID": ("SM_ON_MODEL", "the model to serve"),
    "HF_NUM_CORES": ("SM_ON_TENSOR_PARALLEL_SIZE", "NeuronCores per copy"),
    "HF_BATCH_SIZE": ("SM_ON_BATCH_SIZE", "compiled batch size"),
    "MAX_BATCH_SIZE": ("SM_ON_BATCH_SIZE", "served batch size"),
    "HF_SEQUENCE_LENGTH": ("SM_ON_SEQUENCE_LENGTH", "compiled sequence length"),
    "MAX_TOTAL_TOKENS": ("SM_ON_SEQUENCE_LENGTH", "prompt + output tokens"),
}
TGI_DROPPED = {
    "MAX_INPUT_TOKENS": "vLLM bounds prompt + output by the sequence length only",
    "MAX_INPUT_LENGTH": "vLLM bounds prompt + output by the sequence length only",
    "HF_AUTO_CAST_TYPE": "the dtype is the compiled one (smneuron.json)",
    "MAX_BATCH_PREFILL_TOKENS": "not a vLLM setting on Neuron",
}


def translate_tgi(
    environment: dict[str, str],
    names: dict[str, str] | None = None,
    container: str = "the optimum-neuron vLLM container",
) -> tuple[dict[str, str], list[str]]:
    """Turn TGI-neuronx variables into the vLLM container's ``SM_ON_*`` ones (or, through ``names``, another
    container's: ``SM_ON_X`` -> its variable), with a notice for each.

    Raises:
        ConfigError: two TGI variables that map to one setting disagree (e.g. HF_BATCH_SIZE 4, MAX_BATCH_SIZE 8).
    """
    out = {k: v for k, v in environment.items() if k not in TGI_VARIABLES and k not in TGI_DROPPED}
    notes = []
    for old, (on, meaning) in TGI_VARIABLES.items():
        if old not in environment:
            continue
        new, value = (names or {}).get(on, on), environment[old]
        if new in out and out[new] != value:
            raise ConfigError(
                f"{old}={value} ({meaning}) disagrees with {new}={out[new]}.",
                hint=f"Keep one of them; the vLLM container reads {new}.",
            )
        out[new] = value
        notes.append(f"TGI variable {old}={value} translated to {new} ({container})")
    for old, why in TGI_DROPPED.items():
        if old in environment:
            notes.append(f"TGI variable {old} dropped: {why}")
    if "HUGGING_FACE_HUB_TOKEN" in out:
        out.setdefault("HF_TOKEN", out.pop("HUGGING_FACE_HUB_TOKEN"))
        notes.append("HUGGING_FACE_HUB_TOKEN passed as HF_TOKEN")
    return out, notes


# GenerationConfig field -> the vLLM container's variable: the one mapping, both ways
SERVED = {
    "batch_size": "SM_ON_BATCH_SIZE",
    "sequence_length": "SM_ON_SEQUENCE_LENGTH",
    "tensor_parallel_size": "SM_ON_TENSOR_PARALLEL_SIZE",
}


# the same fields as AWS's GPU vLLM image takes them (vLLM server flags)
GPU_SERVED = {
    "batch_size": "SM_VLLM_MAX_NUM_SEQS",
    "sequence_length": "SM_VLLM_MAX_MODEL_LEN",
    "tensor_parallel_size": "SM_VLLM_TENSOR_PARALLEL_SIZE",
}
VLLM_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}  # vLLM's --dtype names


def served_configuration(environment: dict[str, str]) -> dict[str, int | None]:
    """Batch size, sequence length and tensor parallel size as a Model's container environment serves them
    (None where a variable is missing or not a number): what ``container_environment`` wrote, read back."""
    out: dict[str, int | None] = {}
    served = GPU_SERVED if any(k.startswith("SM_VLLM_") for k in environment) else SERVED
    for field_name, variable in served.items():
        value = environment.get(variable)
        out[field_name] = int(value) if value is not None and str(value).isdigit() else None
    return out


ALLOW_COMPILE = "SM_ON_ALLOW_NON_CACHED_MODEL"  # the container's permission to compile at start


def container_environment(
    generation: GenerationConfig,
    extra: dict[str, str],
    *,
    target: str = "inf2",
    served_batch_size: int | None = None,
    hf_token_env: str = "HF_TOKEN",
) -> tuple[dict[str, str], list[str]]:
    """The vLLM container environment for a compiled model (its smneuron.json ``generation`` section) and its
    ``target`` (cuda: AWS's GPU vLLM image, ``SM_VLLM_*``; inf2 and cpu: optimum-neuron's, ``SM_ON_*``).

    Raises:
        ConfigError: a served batch size, sequence length or tp that differs from the compiled one (inf2), a tp or
            dtype that differs from the artifact's (cuda), or a variable of the other image.
    """
    if target == "cuda":
        env, notes = _gpu_environment(generation, extra, served_batch_size)
        return env, notes + _hf_token(env, generation.hub_model_id, hf_token_env)
    wrong = sorted(k for k in extra if k.startswith("SM_VLLM_"))
    if wrong:
        raise ConfigError(
            f"{', '.join(wrong)}: a variable of AWS's GPU vLLM image, and this artifact is served by optimum-neuron's "
            "vLLM container (SM_ON_* variables).",
            hint="Set the SM_ON_<ARG> variable instead, or drop it; for a GPU, compile with --target cuda.",
        )
    env, notes = translate_tgi(extra)
    compiled = {variable: str(getattr(generation, f)) for f, variable in SERVED.items()}
    if served_batch_size is not None:
        env["SM_ON_BATCH_SIZE"] = str(served_batch_size)
    for key, value in compiled.items():
        if key in env and env[key] != value:
            what = key[len("SM_ON_") :].lower().replace("_", " ")
            raise ConfigError(
                f"{key}={env[key]} differs from the compiled {what} {value}: the optimum-neuron vLLM container "
                "refuses to start a model with another batch size, sequence length or tensor parallel size.",
                hint=f"Drop {key} (smneuron sets {value}), or recompile with the {what} you want.",
            )
        env[key] = value
    hub = generation.hub_model_id
    env["SM_ON_MODEL"] = env.get("SM_ON_MODEL") or hub or MODEL_DIR
    # optimum-neuron v0.4.5 optimum/commands/neuron/serve.py: --allow_non_cached_model, a flag without value (the
    # entrypoint passes SM_ON_X=value as `--x value`, which argparse refuses)
    if env.get(ALLOW_COMPILE):
        raise ConfigError(
            f"{ALLOW_COMPILE}={env[ALLOW_COMPILE]}: the container's entrypoint turns SM_ON_X=value into `--x value`, "
            "and --allow_non_cached_model takes no value, so the container would exit at start.",
            hint=f"Set it empty ({ALLOW_COMPILE}=) to let the container compile, or leave it out.",
        )
    if ALLOW_COMPILE in env:
        notes.append(
            f"{ALLOW_COMPILE} is set: a model with no cached configuration is compiled by the container at start, "
            "at every cold start and scale-out (minutes to an hour); without it the container fails fast with "
            "'No cached version found'. smneuron never sets it"
        )
    return env, notes + _hf_token(env, hub, hf_token_env)


def _hf_token(env: dict[str, str], hub: str | None, hf_token_env: str) -> list[str]:
    """HF_TOKEN for a hub model (only a hub model is downloaded; shipped weights need no token)."""
    token = os.environ.get(hf_token_env)
    if not hub or "HF_TOKEN" in env:
        return []
    if token:
        env["HF_TOKEN"] = token
        return [f"HF_TOKEN taken from ${hf_token_env} (redacted in every printout)"]
    return [f"no ${hf_token_env} set: a gated hub model will fail to download"]


def _gpu_environment(
    generation: GenerationConfig, extra: dict[str, str], served_batch_size: int | None
) -> tuple[dict[str, str], list[str]]:
    """``SM_VLLM_*`` for AWS's GPU vLLM image; TGI variables translated to them."""
    wrong = sorted(k for k in extra if k.startswith("SM_ON_"))
    if wrong:
        raise ConfigError(
            f"{', '.join(wrong)}: a variable of optimum-neuron's vLLM container (inf2), and this cuda artifact is "
            "served by AWS's GPU vLLM image (SM_VLLM_* variables).",
            hint="Set the SM_VLLM_<ARG> variable instead (SM_VLLM_MAX_NUM_SEQS for the batch size, SM_VLLM_MAX_MODEL_LEN "
            "for the sequence length), or drop it.",
        )
    names = {v: GPU_SERVED[f] for f, v in SERVED.items()} | {"SM_ON_MODEL": "SM_VLLM_MODEL"}
    env, notes = translate_tgi(extra, names, "AWS's GPU vLLM image")
    artifact = {
        "SM_VLLM_TENSOR_PARALLEL_SIZE": str(generation.tensor_parallel_size),
        "SM_VLLM_DTYPE": VLLM_DTYPES.get(generation.dtype, generation.dtype),
    }
    for key, value in artifact.items():
        if key in env and env[key] != value:
            raise ConfigError(
                f"{key}={env[key]} differs from the artifact's {value}: smneuron sized the GPUs per copy with it.",
                hint=f"Drop {key}, or compile again with the value you want (`smneuron compile MODEL --target cuda "
                "--tensor-parallel-size N --dtype bf16|fp16|fp32`).",
            )
        env[key] = value
    runtime = {
        "SM_VLLM_MAX_NUM_SEQS": str(served_batch_size or generation.batch_size),
        "SM_VLLM_MAX_MODEL_LEN": str(generation.sequence_length),
    }
    for key, value in runtime.items():
        if key in env and env[key] != value:
            notes.append(
                f"{key}={env[key]} as given (the artifact records {value}): a vLLM runtime setting on a GPU"
            )
        env.setdefault(key, value)
    env["SM_VLLM_MODEL"] = env.get("SM_VLLM_MODEL") or generation.hub_model_id or MODEL_DIR
    return env, notes
