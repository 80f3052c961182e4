"""The endpoint environment, fed to the real toolkit's TorchServe config generation."""

from __future__ import annotations

import re

import pytest

from smneuron.catalog import INSTANCE_TYPES, InstanceType
from smneuron.container.encoder_env import HANDLER, container_environment, workers_for
from smneuron.errors import ConfigError
from smneuron.specs.models import EndpointSpec


def ts_config(monkeypatch, env: dict[str, str]) -> str:
    from sagemaker_pytorch_serving_container import torchserve

    for k in list(__import__("os").environ):
        if k.startswith(("SAGEMAKER_", "TS_")):
            monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return torchserve._generate_ts_config_properties(torchserve.DEFAULT_HANDLER_SERVICE)


@pytest.mark.parametrize("name", [n for n, t in INSTANCE_TYPES.items() if t.is_neuron])
def test_toolkit_config_gets_one_worker_per_neuroncore_and_our_batching(monkeypatch, name):
    inst = InstanceType.parse(name)
    env = container_environment(
        inst, EndpointSpec(instance_type=name, batch_size=8, max_batch_delay_ms=7), region="us-east-1"
    )
    cfg = ts_config(monkeypatch, env)
    n = inst.neuron_cores
    assert f"default_workers_per_model={n}" in cfg
    block = re.search(
        r'"minWorkers": (\d+).*"maxWorkers": (\d+).*"batchSize": (\d+).*"maxBatchDelay": (\d+)',
        cfg.replace("\\\n", ""),
        re.S,
    )
    assert block and block.groups() == (str(n), str(n), "8", "7")
    assert "enable_envvars_config=true" in cfg  # so TorchServe takes TS_DEFAULT_SERVICE_HANDLER from env
    assert env["TS_DEFAULT_SERVICE_HANDLER"] == HANDLER == "/opt/ml/model/code/smneuron_handler.py:handle"
    assert env["NEURON_RT_NUM_CORES"] == "1"


def test_the_trap_it_avoids(monkeypatch):
    """Setting only batch size (as the common samples do) pins the toolkit to ONE worker."""
    cfg = ts_config(monkeypatch, {"SAGEMAKER_MODEL_SERVER_WORKERS": "12", "SAGEMAKER_TS_BATCH_SIZE": "8"})
    assert '"minWorkers": 1' in cfg and '"maxWorkers": 1' in cfg


def test_worker_limits():
    inf1 = InstanceType.parse("ml.inf1.6xlarge")
    assert workers_for(inf1, 4) == 4
    with pytest.raises(ConfigError, match="cannot share a core"):
        workers_for(inf1, 4, requested=5)
    with pytest.raises(ConfigError, match="spans 8 NeuronCores"):
        workers_for(InstanceType.parse("ml.inf1.xlarge"), 8)
    env = container_environment(
        inf1,
        EndpointSpec(instance_type="ml.inf1.6xlarge", neuron_monitor=True),
        cores_per_model=4,
        region="eu-west-1",
    )
    assert env["SAGEMAKER_MODEL_SERVER_WORKERS"] == "4" and env["NEURON_RT_NUM_CORES"] == "4"
    assert env["NEURON_MONITOR_CW_REGION"] == "eu-west-1"
    cpu = container_environment(
        InstanceType.parse("ml.c5.4xlarge"), EndpointSpec(instance_type="ml.c5.4xlarge")
    )
    assert cpu["SAGEMAKER_MODEL_SERVER_WORKERS"] == "8" and cpu["OMP_NUM_THREADS"] == "2"


def test_a_variable_smneuron_derives_from_a_setting_is_refused_with_that_setting():
    """--env SAGEMAKER_PROGRAM=x replaced smneuron's entry point (the container would import a module that is not
    there), and --env SAGEMAKER_MODEL_SERVER_WORKERS=9 served 9 workers where the plan, its memory check and its price
    said 2: each is refused with the setting that decides it; the same value as smneuron's is no contradiction."""
    inst = InstanceType.parse("ml.c6i.xlarge")
    env = {"SAGEMAKER_PROGRAM": "x", "SAGEMAKER_MODEL_SERVER_WORKERS": "9", "SAGEMAKER_TS_BATCH_SIZE": "4"}
    with pytest.raises(ConfigError) as e:
        container_environment(inst, EndpointSpec(instance_type=inst.name, environment=env), compiled_batch=1)
    said = str(e.value) + e.value.hint
    assert "SAGEMAKER_PROGRAM=x (smneuron sets inference.py" in said and "--code DIR" in said
    assert "SAGEMAKER_MODEL_SERVER_WORKERS=9 (smneuron sets 2: --workers" in said
    assert "SAGEMAKER_TS_BATCH_SIZE=4 (smneuron sets 1: --batch-size" in said
    same = {"SAGEMAKER_PROGRAM": "inference.py", "SAGEMAKER_MODEL_SERVER_WORKERS": "2"}
    assert (
        container_environment(inst, EndpointSpec(instance_type=inst.name, environment=same))[
            "SAGEMAKER_MODEL_SERVER_WORKERS"
        ]
        == "2"
    )
    mine = container_environment(
        inst, EndpointSpec(instance_type=inst.name, environment={"OMP_NUM_THREADS": "3"}), compiled_batch=1
    )
    assert mine["OMP_NUM_THREADS"] == "3" and mine["MKL_NUM_THREADS"] == "2"  # no setting decides threads
