"""The cuda target, checked where no GPU is: the graph it traces on this CPU must not pin tensors to the CPU, its
precision is checked against the fp32 model, the inference code picks the worker's GPU (and refuses a host
without one), and the catalog and the deploy plan pair it with GPU instances only. benchmarks/gpu_check.sh
runs the same path on a real GPU (benchmarks/results/ holds an H100 run)."""

from __future__ import annotations

import json
import sys
import types

import pytest
import torch

from smneuron.catalog import InstanceType, resolve_image
from smneuron.compilation import targets, tasks
from smneuron.compilation.encoder import compile_model


@pytest.fixture(scope="module")
def cuda_artifact(tiny_encoder, tmp_path_factory):
    out = tmp_path_factory.mktemp("cuda") / "a"
    compile_model(tiny_encoder, out, target="cuda", task="feature-extraction", buckets="16,32", cache=False)
    return out


def test_the_cuda_graph_pins_nothing_to_the_cpu_where_a_plain_trace_does(tiny_encoder, cuda_artifact):
    m = json.loads((cuda_artifact / "smneuron.json").read_text())
    assert m["compiler"]["target"] == "cuda" and m["compiler"]["precision"] == "fp16"
    assert all(b["validation"]["cosine_min"] > 0.999 for b in m["buckets"])  # fp16 vs the fp32 model
    weights = torch.load(cuda_artifact / "weights.pt")
    assert {t.dtype for t in weights.values()} == {torch.float16}  # half the bytes to ship and load
    graph = torch.jit.load(str(cuda_artifact / m["buckets"][0]["file"]))
    assert targets.cpu_pinned_ops(graph) == []
    # the check is not vacuous: transformers' own mask code, traced as the cpu target does, pins tensors
    loaded = tasks.load(tiny_encoder, "feature-extraction")
    ids = torch.ones(2, 16, dtype=torch.long)
    with torch.no_grad():
        plain = torch.jit.trace(loaded.module, (ids, torch.ones_like(ids), torch.zeros_like(ids)))
    assert targets.cpu_pinned_ops(plain), "a plain trace was expected to pin arange/zeros to the CPU"


def _serving(artifact):
    """The shipped inference code, imported as the container imports it (code/ on the path)."""
    from conftest import REPO

    sys.path.insert(0, str(REPO / "inference_code"))
    import serving_model

    return serving_model


def test_the_inference_code_picks_the_workers_gpu_and_refuses_a_host_without_one(cuda_artifact):
    serving_model = _serving(cuda_artifact)
    manifest = json.loads((cuda_artifact / "smneuron.json").read_text())
    fake = types.SimpleNamespace(
        cuda=types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 2), device=torch.device
    )
    assert serving_model.select_device(manifest, fake, {"SMNEURON_GPU_ID": "3"}) == torch.device("cuda", 1)
    assert serving_model.select_device(manifest, fake, {}) == torch.device("cuda", 0)
    assert serving_model.select_device({"compiler": {"target": "cpu"}}, fake, {}) is None
    with pytest.raises(serving_model.ArtifactLoadError, match="needs an NVIDIA GPU.*--target cpu"):
        serving_model.select_device(manifest, torch, {})  # this machine: no GPU


def test_a_cuda_artifact_answers_like_the_model_once_on_its_device(cuda_artifact, monkeypatch):
    """The whole load -> move -> forward path, with the device being this CPU (what a GPU run does, minus CUDA)."""
    serving_model = _serving(cuda_artifact)
    monkeypatch.setattr(serving_model, "select_device", lambda manifest, torch: torch.device("cpu"))
    model = serving_model.LoadedArtifact(str(cuda_artifact))
    model.warm_up()
    encodings = model.tokenize(["the movie was great", "a dull book"], False)
    rows = model.forward(encodings)
    assert [tuple(r.shape) for r in rows] == [(32,), (32,)] and all(r.dtype == torch.float32 for r in rows)
    assert all(torch.isfinite(r).all() for r in rows)


@pytest.mark.parametrize("name", ["ml.g4dn.xlarge", "ml.g5.2xlarge", "ml.g6.xlarge", "ml.g6e.xlarge"])
def test_gpu_instances_get_the_pytorch_gpu_dlc_and_the_cuda_target(name):
    inst = InstanceType.parse(name)
    assert inst.target == "cuda" and inst.gpus >= 1 and inst.recommended_workers() == inst.gpus
    uri = resolve_image(inst, "eu-west-1").uri
    assert uri == (
        "763104351884.dkr.ecr.eu-west-1.amazonaws.com/pytorch-inference:2.6.0-gpu-py312-cu124-ubuntu22.04-sagemaker"
    )
    assert "-cpu-" in resolve_image("ml.c7i.2xlarge", "eu-west-1").uri


def _gpu_plan(artifact, instance: str, size_bytes: int | None = None, workers: int | None = None):
    from dataclasses import replace

    from smneuron.artifact.staging import describe_local
    from smneuron.deployment.encoder_plan import plan
    from smneuron.specs.models import EndpointSpec

    data = describe_local(artifact)
    if size_bytes is not None:
        data = replace(data, size_bytes=size_bytes)
    return plan(data, EndpointSpec(name="gpu", instance_type=instance), region="us-east-1", workers=workers)


def _layout(p) -> tuple[int, int, str]:
    env = p.environment
    notes = [n for n in p.notes if "worker" in n]
    assert len(notes) <= 1, notes
    return int(env["SAGEMAKER_MODEL_SERVER_WORKERS"]), int(env["OMP_NUM_THREADS"]), (notes or [""])[0]


def test_a_small_model_gets_as_many_workers_per_gpu_as_the_host_feeds_and_the_plan_says_why(cuda_artifact):
    workers, threads, note = _layout(_gpu_plan(cuda_artifact, "ml.g6.xlarge"))
    assert (workers, threads) == (2, 2)  # 4 vCPUs: 2 workers, 2 threads each
    assert note.startswith("ml.g6.xlarge: 2 workers per GPU: one worker needs about 0.5 GiB")
    assert "4 vCPUs per GPU feed 2" in note and "--workers" in note
    # 8 vCPUs for the one GPU: four workers (measured on an H100: 4 served 1.46x what 2 did)
    workers, threads, note = _layout(_gpu_plan(cuda_artifact, "ml.g6.2xlarge"))
    assert (workers, threads) == (4, 2) and "8 vCPUs per GPU feed 4" in note
    # 16 vCPUs: still four (8 served 1.03x what 4 did on an H100), and said
    workers, threads, note = _layout(_gpu_plan(cuda_artifact, "ml.g6.4xlarge"))
    assert (workers, threads) == (4, 4) and "4 at most (more served no faster on an H100)" in note
    # four GPUs, 12 vCPUs each: four workers each; the same rule per GPU
    workers, threads, _ = _layout(_gpu_plan(cuda_artifact, "ml.g5.12xlarge"))
    assert (workers, threads) == (16, 3)


def test_a_large_model_gets_fewer_workers_where_more_would_crowd_the_gpus_memory(cuda_artifact):
    five_gib = (
        5 * 2**30
    )  # 0.5 + 2 x 5 = 10.5 GiB a worker: two are over half a T4 (8 GiB), not of an L40S (24)
    workers, _, note = _layout(_gpu_plan(cuda_artifact, "ml.g4dn.xlarge", five_gib))
    assert workers == 1 and "1 worker per GPU: one worker needs about 10.5 GiB" in note
    assert "two would take more than half of the NVIDIA T4's 16 GiB" in note
    two_gib = (
        2 * 2**30
    )  # 4.5 GiB a worker: five fit in half the L40S's 48 GiB, two in half an L4's 24, one in a T4's
    assert _layout(_gpu_plan(cuda_artifact, "ml.g6e.xlarge", two_gib))[0] == 2  # its 4 vCPUs feed two
    workers, _, note = _layout(_gpu_plan(cuda_artifact, "ml.g6.4xlarge", two_gib))  # 16 vCPUs would feed four
    assert workers == 2 and "2 fit within half of the NVIDIA L4's 24 GiB" in note
    assert _layout(_gpu_plan(cuda_artifact, "ml.g4dn.xlarge", two_gib))[0] == 1
    unknown = _layout(_gpu_plan(cuda_artifact, "ml.g6.xlarge", 0))  # staged from an S3 prefix: no size
    assert unknown[0] == 1 and "size is unknown" in unknown[2]


def test_workers_given_by_hand_win_and_nothing_is_said_about_the_rule(cuda_artifact):
    workers, threads, note = _layout(_gpu_plan(cuda_artifact, "ml.g6.xlarge", workers=3))
    assert (workers, threads, note) == (3, 1, "")


def test_gpu_check_says_plainly_that_nothing_was_measured_without_a_gpu(tmp_path):
    """benchmarks/gpu_check.sh (the cuda target's real check) on a machine with no NVIDIA GPU: exit 3, said."""
    import subprocess

    from conftest import REPO

    def gpu_check(nvidia_smi: str) -> subprocess.CompletedProcess:
        (tmp_path / "nvidia-smi").write_text(f"#!/bin/sh\n{nvidia_smi}\n")
        (tmp_path / "nvidia-smi").chmod(0o755)
        env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "PYTHON": sys.executable}
        script = str(REPO / "benchmarks" / "gpu_check.sh")
        return subprocess.run(["bash", script], capture_output=True, text=True, env=env, timeout=60)

    out = gpu_check("echo 'NVIDIA-SMI has failed: no devices were found' >&2; exit 9")
    assert out.returncode == 3
    assert "no NVIDIA GPU on this machine" in out.stderr and "nothing was measured" in out.stderr
    # a GPU the driver sees, but a Python whose torch was built without CUDA (this machine's): said, exit 3
    out = gpu_check("echo 'GPU 0: NVIDIA H100 80GB HBM3'")
    assert out.returncode == 3
    assert "has no torch with CUDA" in out.stderr and "set PYTHON" in out.stderr
