from __future__ import annotations

import json
from pathlib import Path

import botocore.session
import pytest

from smneuron import catalog
from smneuron.catalog import InstanceType, resolve_image
from smneuron.errors import ConfigError, UnknownInstanceTypeError

SM = botocore.session.get_session().get_service_model("sagemaker")


def enum(shape: str) -> set[str]:
    return set(SM.shape_for(shape).enum)


def test_the_catalog_knows_every_sagemaker_hosting_type():
    hosting = enum("ProductionVariantInstanceType")
    assert set(catalog.INSTANCE_TYPES) == hosting
    m5 = catalog.InstanceType.parse("ml.m5.xlarge")
    assert (m5.family, m5.vcpus, m5.memory_gib) == ("cpu", 4, 16)
    g6e = catalog.InstanceType.parse("ml.g6e.12xlarge")
    assert (g6e.gpus, g6e.accelerator_memory_gib, g6e.accelerator) == (4, 192, "NVIDIA L40S")
    trn = catalog.InstanceType.parse("ml.trn1.32xlarge")
    assert (trn.family, trn.neuron_cores, trn.recommended_workers()) == ("trn", 32, 32)


@pytest.mark.parametrize(
    ("use", "shape"),
    [
        ("endpoint", "ProductionVariantInstanceType"),
        ("transform", "TransformInstanceType"),
        ("processing", "ProcessingInstanceType"),
    ],
)
def test_catalog_uses_match_botocore_enums(use, shape):
    allowed = enum(shape)
    for t in catalog.INSTANCE_TYPES.values():
        assert (t.name in allowed) == (use in t.uses), (t.name, use)


def test_platform_facts_processing_and_transform():
    assert not any(
        n.startswith("ml.inf") for n in enum("ProcessingInstanceType") & set(catalog.INSTANCE_TYPES)
    )
    with pytest.raises(UnknownInstanceTypeError, match="processing"):
        InstanceType.parse("ml.inf2.xlarge", use="processing")
    with pytest.raises(UnknownInstanceTypeError, match="transform"):
        InstanceType.parse("ml.inf1.xlarge", use="transform")
    assert InstanceType.parse("ml.inf2.xlarge", use="transform").name == "ml.inf2.xlarge"


def test_parse_accepts_short_names_and_knows_the_hardware():
    t = InstanceType.parse("inf2.24xlarge")
    assert (t.name, t.neuron_cores, t.chips, t.neuron_core_version, t.target) == (
        "ml.inf2.24xlarge",
        12,
        6,
        "v2",
        "inf2",
    )
    assert InstanceType.parse("ml.inf1.6xlarge").recommended_workers() == 16
    assert InstanceType.parse("ml.inf1.6xlarge").recommended_workers(cores_per_model=4) == 4


def test_unknown_type_lists_valid_ones_and_suggests_nearest():
    with pytest.raises(UnknownInstanceTypeError) as e:
        InstanceType.parse("ml.inf2.xlarg")
    assert e.value.suggestion == "ml.inf2.xlarge"
    assert "ml.inf1.24xlarge" in str(e.value)


def test_images_for_each_family_and_region():
    uri = resolve_image("ml.inf2.xlarge", "eu-west-1").uri
    assert uri == (
        "763104351884.dkr.ecr.eu-west-1.amazonaws.com/"
        "pytorch-inference-neuronx:2.9.0-neuronx-py312-sdk2.31.1-ubuntu24.04"
    )
    inf1 = resolve_image("ml.inf1.xlarge", "cn-north-1").uri
    assert inf1 == (
        "727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn/"
        "pytorch-inference-neuron:1.13.1-neuron-py310-sdk2.20.2-ubuntu20.04"
    )
    pinned = resolve_image("ml.inf2.xlarge", "us-east-1", torch_version="2.1.2")
    assert pinned.version.neuron_sdk == "2.20.2" and pinned.version.python_version == "3.10"
    assert resolve_image("ml.inf2.xlarge", "us-east-1", uri="my/custom:1").uri == "my/custom:1"
    with pytest.raises(ConfigError, match="Known tags"):
        resolve_image("ml.inf1.xlarge", "us-east-1", torch_version="2.5.1")
    with pytest.raises(ConfigError, match="eu-west-1"):
        resolve_image("ml.inf2.xlarge", "eu-wset-1")


def test_registry_map_agrees_with_the_sagemaker_sdk():
    import importlib.util

    spec = importlib.util.find_spec("sagemaker.core")  # SDK v3 keeps the image maps in sagemaker-core
    path = Path(spec.submodule_search_locations[0]) / "image_uri_config" / "pytorch.json"
    versions = json.loads(path.read_text())["inference"]["versions"]
    registries = versions[list(versions)[-1]]["registries"]
    for region, account in registries.items():
        assert catalog.REGISTRY_ACCOUNTS.get(region, catalog.DEFAULT_REGISTRY) == account, region
        assert region in catalog.KNOWN_REGIONS


def test_prices_have_source_and_can_be_overridden(tmp_path, monkeypatch):
    table = catalog.load_prices()
    assert table.source.startswith("https://") and table.as_of
    compared = ("inf1", "inf2", "m5", "m6i", "m7i", "c5", "c6i", "c7i", "g4dn", "g5", "g6", "g6e", "trn1")
    priced = [n for n in catalog.INSTANCE_TYPES if n.split(".")[1] in compared]
    assert len(priced) > 80 and all(table.hourly(n) for n in priced)
    assert table.source_of("ml.inf2.xlarge") == table.source  # a transcribed list price
    assert table.source_of("ml.m5.xlarge").startswith("estimate") and "ml.m5.xlarge" in table.estimated
    f = tmp_path / "prices.yaml"
    f.write_text("ml.inf2.xlarge: 0.5\n")
    monkeypatch.setenv("SMNEURON_PRICES_FILE", str(f))
    t2 = catalog.load_prices({"ml.inf1.xlarge": 0.1})
    assert t2.hourly("ml.inf2.xlarge") == 0.5 and t2.hourly("ml.inf1.xlarge") == 0.1
    assert "override" in t2.source
