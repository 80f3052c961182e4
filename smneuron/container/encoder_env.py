"""The container environment of an endpoint: workers per NeuronCore, batching, handler, timeouts.

One function, used by deploy (real endpoints), the local endpoint and the pipeline, so every place
lays the model server out the same way. The traps it avoids (see PLATFORM.md):

- TorchServe defaults to one worker per vCPU, but a Neuron process takes every visible NeuronCore
  and processes cannot share a core: workers = NeuronCores / cores per model, never more.
- Any SAGEMAKER_TS_* variable makes the toolkit write a per-model block whose min/max workers
  default to 1, silently overriding SAGEMAKER_MODEL_SERVER_WORKERS: set MIN and MAX explicitly.
- The toolkit honours SAGEMAKER_HANDLER only in multi-model mode; single-model endpoints take the
  handler from TorchServe's ``default_service_handler``, which TorchServe lets the environment
  override (``TS_DEFAULT_SERVICE_HANDLER``, as the toolkit enables ``enable_envvars_config``).
- Every worker's torch starts one intra-op thread per vCPU; with several workers per host that
  oversubscribes the CPUs on every family, Inferentia included (the host still tokenizes, pads and
  runs any CPU-placed operators). Measured in the real TorchServe stack with the cpu artifact: below
  10 req/s instead of ~50 on 2 vCPUs. So OMP_NUM_THREADS = MKL_NUM_THREADS = vCPUs // workers.
- GPUs (cuda artifacts): as many workers per GPU as the host's vCPUs, the GPU's memory and 4 allow (``gpu_workers``
  says which limit chose).
"""

from __future__ import annotations

from smneuron.catalog import InstanceType
from smneuron.errors import ConfigError
from smneuron.specs.models import EndpointSpec

MODEL_DIR = "/opt/ml/model"
DEFAULT_BATCH = 8  # TorchServe batch size when the artifact does not say what it was compiled for
HANDLER = f"{MODEL_DIR}/code/smneuron_handler.py:handle"

# A cuda worker is one process with its own CUDA context (PyTorch 2.x on CUDA 12 with lazy module loading: about
# 0.3-0.6 GiB before any tensor) that loads every traced file of the artifact onto its GPU, and needs about as much
# again for activations at the largest bucket and for the caching allocator's slack. These are smneuron's margins,
# not an NVIDIA figure.
CUDA_CONTEXT_GIB = 0.5
GPU_SHARE = 0.5  # the workers of one GPU together take at most this share of its memory
VCPUS_PER_GPU_WORKER = 2  # each worker tokenizes, pads and copies on the host
# The most workers per GPU smneuron gives: where the measured curve flattens (benchmarks/results/gpu_check-h100-2026-11-26-
# workers.log: all-MiniLM-L6-v2 on an H100 with 16 host cores, 64 requests in flight from 4 load generators: 1, 2, 4
# and 8 workers served 1,042, 1,862, 2,718 and 2,797 req/s; the GPU was 7-35% busy).
MAX_WORKERS_PER_GPU = 4


def gpu_workers(instance: InstanceType, model_bytes: int | None) -> tuple[int, str]:
    """Workers for a cuda artifact on ``instance``, and why, in one sentence.

    A worker's batch runs on the GPU in a few milliseconds for a small model, while the host work around it
    (tokenize, pad, copy to the device, write the answers) takes as long or longer in the same process: one worker
    leaves the GPU idle most of the time. Measured on an H100 with all-MiniLM-L6-v2 (benchmarks/gpu_check.sh): 2 workers
    served 1.79x what 1 did, 4 1.46x what 2 did, 8 1.03x what 4 did, the GPU at most 35% busy, each worker using
    0.7-1 host core. So each GPU gets as many workers as three limits allow, the smallest of them: the host (2 vCPUs
    per worker), the GPU's memory (all its workers, each a CUDA context + twice the artifact's traced weights, within
    half of it) and 4 (where the curve flattens). A model too large for two within half the GPU keeps one.
    """
    gpus = max(1, instance.gpus)
    per_gpu = instance.accelerator_memory_gib / gpus
    if not model_bytes:
        return (
            gpus,
            "1 worker per GPU: the artifact's size is unknown here, so whether more fit is not decided",
        )
    footprint = CUDA_CONTEXT_GIB + 2 * model_bytes / 2**30
    cpus = instance.vcpus // gpus
    accelerator = instance.accelerator or "GPU"
    limits = {
        "host": cpus // VCPUS_PER_GPU_WORKER,
        "memory": int(GPU_SHARE * per_gpu // footprint),
        "most": MAX_WORKERS_PER_GPU,
    }
    n = max(1, min(limits.values()))
    sizes = (
        f"one worker needs about {footprint:.1f} GiB (a {CUDA_CONTEXT_GIB:g} GiB CUDA context and twice the "
        f"artifact's {model_bytes / 2**30:.2f} GiB)"
    )
    if n == 1:
        why = (
            f"{sizes}, and two would take more than half of the {accelerator}'s {per_gpu:g} GiB"
            if limits["memory"] < 2
            else f"{cpus} vCPUs per GPU feed one worker"
        )
        return gpus, f"1 worker per GPU: {why} (override with --workers)"
    bound = min(limits, key=lambda k: (limits[k], list(limits).index(k)))
    reason = {
        "host": f"{cpus} vCPUs per GPU feed {n} ({VCPUS_PER_GPU_WORKER} each)",
        "memory": f"{n} fit within half of the {accelerator}'s {per_gpu:g} GiB",
        "most": f"{n} at most (more served no faster on an H100)",
    }[bound]
    overlap = "the other prepares its batch" if n == 2 else "the others prepare their batches"
    return n * gpus, (
        f"{n} workers per GPU: {sizes}; {reason}; {overlap} while one's runs on the GPU (override with --workers)"
    )


def workers_for(
    instance: InstanceType, cores_per_model: int, requested: int | None = None, model_bytes: int | None = None
) -> int:
    """Model-server workers for ``instance``; refuse more workers than NeuronCores allow. On a GPU type the
    artifact's size (``model_bytes``) decides how many workers per GPU (``gpu_workers``).

    Raises:
        ConfigError: the model needs more cores than the instance has, or ``requested`` exceeds
            NeuronCores / cores_per_model.
    """
    if instance.is_neuron:
        if cores_per_model > instance.neuron_cores:
            raise ConfigError(
                f"The model spans {cores_per_model} NeuronCores but {instance.name} has {instance.neuron_cores}.",
                hint="Pick a larger instance (`smneuron instances`) or compile with fewer pipeline cores.",
            )
        most = instance.neuron_cores // cores_per_model
        if requested is not None and requested > most:
            raise ConfigError(
                f"{requested} workers asked for, but {instance.name} fits {most} "
                f"({instance.neuron_cores} NeuronCores / {cores_per_model} per model): Neuron processes cannot "
                "share a core and the runtime is not fork-safe.",
                hint="To serve more copies, raise models_per_worker (more copies inside each worker) instead.",
            )
        return requested or most
    if instance.gpus:
        return requested or gpu_workers(instance, model_bytes)[0]
    return requested or instance.recommended_workers()


def serving_batch(spec: EndpointSpec, compiled_batch: int | None) -> tuple[int, str]:
    """TorchServe's batch size for an artifact compiled with ``compiled_batch``, and what to say about it.

    TorchServe hands a batch of up to this many requests to ONE worker. The handler runs them in forward passes of
    the compiled (static) batch size, so a larger TorchServe batch runs as several passes one after the other on
    that worker while other workers may idle: measured on this machine with a batch-1 MiniLM artifact, 2 workers and
    4 requests in flight, TorchServe batch 8 gathered all 4 into one worker (4.0 requests per batch, 42 req/s)
    where the requests spread over both workers gave 49 req/s. So the default is the compiled batch size.
    """
    if spec.batch_size is not None:
        if compiled_batch and spec.batch_size > compiled_batch:
            return spec.batch_size, (
                f"batch size {spec.batch_size} is above the artifact's compiled batch size {compiled_batch}: a full "
                f"batch runs as {-(-spec.batch_size // compiled_batch)} forward passes on one worker while others "
                "may idle (drop --batch-size to serve the compiled size)"
            )
        return spec.batch_size, ""
    if compiled_batch:
        return compiled_batch, (
            f"TorchServe batch size {compiled_batch}: the artifact's compiled batch size, one forward pass per "
            "batch (--batch-size overrides)"
        )
    return (
        DEFAULT_BATCH,
        f"TorchServe batch size {DEFAULT_BATCH}: the artifact does not record its compiled batch size",
    )


def container_environment(
    instance: InstanceType,
    spec: EndpointSpec,
    *,
    cores_per_model: int = 1,
    region: str | None = None,
    workers: int | None = None,
    model_bytes: int | None = None,
    compiled_batch: int | None = None,
) -> dict[str, str]:
    """Every environment variable the serving container gets (user ``spec.environment`` last).

    ``compiled_batch``: the artifact's largest compiled batch size, TorchServe's batch size unless the spec sets
    one (``serving_batch``).
    """
    n = workers_for(instance, cores_per_model, workers, model_bytes)
    timeout = str(spec.model_server_timeout_in_seconds)
    env = {
        "SAGEMAKER_PROGRAM": "inference.py",
        "SAGEMAKER_SUBMIT_DIRECTORY": f"{MODEL_DIR}/code",
        "SAGEMAKER_CONTAINER_LOG_LEVEL": "20",
        "SAGEMAKER_MODEL_SERVER_WORKERS": str(n),
        "SAGEMAKER_MODEL_SERVER_TIMEOUT": timeout,
        "SAGEMAKER_TS_BATCH_SIZE": str(serving_batch(spec, compiled_batch)[0]),
        "SAGEMAKER_TS_MAX_BATCH_DELAY": str(spec.max_batch_delay_ms),
        "SAGEMAKER_TS_MIN_WORKERS": str(n),
        "SAGEMAKER_TS_MAX_WORKERS": str(n),
        "SAGEMAKER_TS_RESPONSE_TIMEOUT": timeout,
        "SAGEMAKER_HANDLER": HANDLER,
        "TS_DEFAULT_SERVICE_HANDLER": HANDLER,
        "SMNEURON_MODELS_PER_WORKER": str(spec.models_per_worker),
    }
    if region:
        env["SAGEMAKER_REGION"] = region
    threads = str(max(1, instance.vcpus // n))
    env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = threads
    if instance.is_neuron:
        env["NEURON_RT_NUM_CORES"] = str(cores_per_model)
        if spec.neuron_monitor and region:
            env["NEURON_MONITOR_CW_REGION"] = region
    _refuse_contradictions(env, spec.environment)
    env.update(spec.environment)
    return env


_CODE = "smneuron's inference code is the entry point (add your own files with --code DIR)"
_WORKERS = "--workers sets the workers per instance (SDK: workers=)"
_TIMEOUT = "--timeout sets it (endpoint.model_server_timeout_in_seconds)"
# the variables smneuron derives from a setting, and the setting a user's --env (endpoint.environment) would
# contradict: a different value is refused with the setting to use instead. The other variables smneuron sets
# (OMP_NUM_THREADS, MKL_NUM_THREADS, SAGEMAKER_CONTAINER_LOG_LEVEL) are the user's to replace: the plan says so
DECIDED_BY = {
    "SAGEMAKER_PROGRAM": _CODE,
    "SAGEMAKER_SUBMIT_DIRECTORY": _CODE,
    "SAGEMAKER_HANDLER": _CODE,
    "TS_DEFAULT_SERVICE_HANDLER": _CODE,
    "SAGEMAKER_MODEL_SERVER_WORKERS": _WORKERS,
    "SAGEMAKER_TS_MIN_WORKERS": _WORKERS,
    "SAGEMAKER_TS_MAX_WORKERS": _WORKERS,
    "SAGEMAKER_MODEL_SERVER_TIMEOUT": _TIMEOUT,
    "SAGEMAKER_TS_RESPONSE_TIMEOUT": _TIMEOUT,
    "SAGEMAKER_TS_BATCH_SIZE": "--batch-size sets it (endpoint.batch_size)",
    "SAGEMAKER_TS_MAX_BATCH_DELAY": "--max-batch-delay-ms sets it (endpoint.max_batch_delay_ms)",
    "SMNEURON_MODELS_PER_WORKER": "the project file's endpoint.models_per_worker sets it",
    "SAGEMAKER_REGION": "the session's region sets it (--region, AWS_REGION)",
    "NEURON_RT_NUM_CORES": "the artifact's NeuronCores per model set it (compile --neuroncore-pipeline-cores)",
    "NEURON_MONITOR_CW_REGION": "the project file's endpoint.neuron_monitor and the region set it",
}


def _refuse_contradictions(ours: dict[str, str], theirs: dict[str, str]) -> None:
    """A user's variable that contradicts one smneuron derives from a setting: the endpoint would serve otherwise
    than the plan says (another entry point, other workers or batching than the ones planned and priced).

    Raises:
        ConfigError: one or more, each with the setting that decides it.
    """
    clashes = [k for k in DECIDED_BY if k in theirs and k in ours and str(theirs[k]) != ours[k]]
    if clashes:
        raise ConfigError(
            "The container variable(s) "
            + "; ".join(f"{k}={theirs[k]} (smneuron sets {ours[k]}: {DECIDED_BY[k]})" for k in clashes)
            + " would contradict the plan.",
            hint="Drop them from --env (endpoint.environment) and use the setting named instead.",
        )


def replaced_by_user(spec: EndpointSpec) -> list[str]:
    """Notes for the variables smneuron sets that a user's --env replaces (those no setting decides)."""
    own = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "SAGEMAKER_CONTAINER_LOG_LEVEL")
    return [
        f"{k}={spec.environment[k]} from --env replaces the value smneuron sets "
        + ("(the instance's vCPUs / workers)" if k != "SAGEMAKER_CONTAINER_LOG_LEVEL" else "(20)")
        for k in own
        if k in spec.environment
    ]
