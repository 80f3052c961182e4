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
