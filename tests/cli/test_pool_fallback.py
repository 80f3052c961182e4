"""Instance pools fall back on the embedded SageMaker, through the CLI as a user runs it: with no ml.c7i.xlarge
capacity, an endpoint whose pools are ml.c7i.xlarge, ml.m7i.xlarge, ml.g6.xlarge is served by ml.m7i.xlarge (and
says so); a single-type endpoint on the short type fails with SageMaker's reason and the way out. Text generation
too: pools ml.c7i.xlarge, ml.g6.xlarge with one component Specification per type are served by the GPU pool's
Model (a cuda artifact, AWS's vLLM image's SM_VLLM_* contract), and a single short type fails."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.e2e


def test_a_short_instance_type_falls_back_to_the_next_pool(
    smneuron_cli, tiny_classifier, tiny_llama, tmp_path
):
    from smneuron.compilation.encoder import compile_model

    cpu, cuda = (
        compile_model(
            tiny_classifier, tmp_path / t, target=t, task="text-classification", buckets="16"
        ).out_dir
        for t in ("cpu", "cuda")
    )
    up = smneuron_cli("local", "up", "--no-capacity", "ml.c7i.xlarge")
    assert "No capacity for: ml.c7i.xlarge" in up.stdout
    smneuron_cli(
        "--local", "deploy", str(cpu), "--instance", "ml.c7i.xlarge,ml.m7i.xlarge,ml.g6.xlarge",
        "--artifact", f"cuda={cuda}", "--name", "pooled",
    )  # fmt: skip
    s = json.loads(smneuron_cli("--local", "status", "pooled", "--json").stdout)
    assert s["serving"]["instance_type"] == "ml.m7i.xlarge"
    assert [(p["instance_type"], p["instances"]) for p in s["serving"]["pools"]] == [
        ("ml.c7i.xlarge", 0),
        ("ml.m7i.xlarge", 1),
        ("ml.g6.xlarge", 0),
    ]
    shown = smneuron_cli("--local", "status", "pooled").stdout
    assert "1 x ml.m7i.xlarge" in shown and "2: ml.m7i.xlarge (1 running)" in " ".join(shown.split())
    answer = json.loads(smneuron_cli("--local", "invoke", "pooled", "hello", "--json").stdout)
    assert answer and "label" in json.dumps(answer)

    short = smneuron_cli(
        "--local", "deploy", str(cpu), "--instance", "ml.c7i.xlarge", "--name", "short", check=False
    )
    said = " ".join((short.stdout + short.stderr).split())
    assert short.returncode == 1 and "InsufficientInstanceCapacity" in said and "instance pools" in said
    assert "Traceback" not in said
    assert [e["name"] for e in json.loads(smneuron_cli("--local", "list", "--json").stdout)] == ["pooled"]

    removed = smneuron_cli("--local", "delete", "pooled", "--yes").stdout
    assert removed.count("model pooled-") == 2  # the cpu layout's Model and the GPU pool's
    assert json.loads(smneuron_cli("--local", "list", "--json").stdout) == []

    # text generation: the component names one Specification per pool; the GPU pool's copies serve
    from smneuron.compilation.generation import compile_generation
    from smneuron.specs.models import CompileSpec

    llm = {
        t: compile_generation(
            tiny_llama,
            tmp_path / f"llm-{t}",
            CompileSpec(task="text-generation", target=t, sequence_length=256),
        ).out_dir
        for t in ("cpu", "cuda")
    }
    smneuron_cli(
        "--local", "deploy", str(llm["cpu"]), "--instance", "ml.c7i.xlarge,ml.g6.xlarge",
        "--artifact", f"cuda={llm['cuda']}", "--name", "llm-pooled",
    )  # fmt: skip
    s = json.loads(smneuron_cli("--local", "status", "llm-pooled", "--json").stdout)
    assert s["serving"]["instance_type"] == "ml.g6.xlarge", s["serving"]
    assert s["model"]["Environment"]["SM_VLLM_MODEL"] == "/opt/ml/model"  # the GPU pool's Model
    streamed = json.loads(
        smneuron_cli("--local", "invoke", "llm-pooled", "hello", "--stream", "--seed", "0", "--json").stdout
    )  # seeded: a random tiny model samples its end-of-sequence token first now and then (an empty answer)
    assert streamed["pieces"] > 0 and streamed["text"]
    short = smneuron_cli(
        "--local",
        "deploy",
        str(llm["cpu"]),
        "--instance",
        "ml.c7i.xlarge",
        "--name",
        "llm-short",
        check=False,
    )
    said = " ".join((short.stdout + short.stderr).split())
    assert short.returncode == 1 and "InsufficientInstanceCapacity" in said and "Traceback" not in said
    removed = smneuron_cli("--local", "delete", "llm-pooled", "--yes").stdout
    assert removed.count("model llm-pooled-") == 2 and "inference component llm-pooled-ic" in removed
    assert json.loads(smneuron_cli("--local", "list", "--json").stdout) == []
