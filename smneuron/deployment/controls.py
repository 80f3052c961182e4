"""The endpoint controls a security team signs off (VPC, network isolation, storage key, data capture), as SageMaker's
requests carry them and as checked before the first Create call.

``Controls`` turns ``EndpointSpec``'s typed settings into the fields of CreateModel (``VpcConfig``,
``EnableNetworkIsolation``) and CreateEndpointConfig (``KmsKeyId``, ``DataCaptureConfig``): botocore's shapes, the
contract. ``check_plan`` refuses what is wrong whatever the account (no I/O); ``account_checks.check_account`` looks the
VPC, the role and the buckets up (EC2, IAM, S3 read calls) before anything is created.

Sources:
- botocore 1.44 SageMaker model: VpcConfig (Subnets 1-16, SecurityGroupIds 1-5), DataCaptureConfig (InitialSamplingPercentage
  0-100, CaptureOptions of CaptureMode Input | Output), CreateEndpointConfig.KmsKeyId: "If any of the models that you
  specify in the ProductionVariants parameter use nitro-based instances with local storage, the KmsKeyId parameter does
  not encrypt instance local storage" (older API references: "the call to CreateEndpointConfig fails").
- Which types have local (instance-store) storage: EC2 DescribeInstanceTypes as moto ships it
  (``catalog/data/instance_storage.json``, ``scripts/write_instance_storage.py``).
- SageMaker Developer Guide, "Give SageMaker AI Hosted Endpoints Access to Resources in Your Amazon VPC" (host-vpc):
  subnets in at least two Availability Zones; without internet access, an S3 VPC endpoint for the model data; the
  execution role's EC2 network-interface permissions (``VPC_ACTIONS``, that page's list; the AmazonSageMakerFullAccess
  managed policy grants them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from smneuron.catalog import InstanceType
from smneuron.errors import ConfigError
from smneuron.session import Session
from smneuron.specs.controls import TAG_LIMIT, DataCaptureSpec, VpcSpec
from smneuron.specs.models import EndpointSpec

VPC_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeVpcs",
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
)
_MODES = {"input": "Input", "output": "Output"}


@dataclass(frozen=True)
class Controls:
    """An endpoint's network, key and capture settings, as one value every plan carries."""

    vpc: VpcSpec | None = None
    network_isolation: bool = False
    kms_key: str | None = None
    data_capture: DataCaptureSpec | None = None

    @classmethod
    def of(cls, spec: EndpointSpec) -> Controls:
        return cls(spec.vpc, spec.network_isolation, spec.kms_key, spec.data_capture)

    def __bool__(self) -> bool:
        return bool(self.vpc or self.network_isolation or self.kms_key or self.data_capture)

    def model_fields(self) -> dict[str, Any]:
        """CreateModel's fields: ``VpcConfig`` and ``EnableNetworkIsolation``."""
        out: dict[str, Any] = {}
        if self.vpc:
            out["VpcConfig"] = {
                "Subnets": list(self.vpc.subnets),
                "SecurityGroupIds": list(self.vpc.security_groups),
            }
        if self.network_isolation:
            out["EnableNetworkIsolation"] = True
        return out

    def config_fields(self) -> dict[str, Any]:
        """CreateEndpointConfig's fields: ``KmsKeyId`` and ``DataCaptureConfig``."""
        out: dict[str, Any] = {}
        if self.kms_key:
            out["KmsKeyId"] = self.kms_key
        c = self.data_capture
        if c:
            out["DataCaptureConfig"] = {
                "EnableCapture": True,
                "InitialSamplingPercentage": c.sampling_percent,
                "DestinationS3Uri": c.destination,
                "CaptureOptions": [{"CaptureMode": _MODES[m]} for m in c.capture],
                "CaptureContentTypeHeader": {"JsonContentTypes": ["application/json"]},
                **({"KmsKeyId": c.kms_key} if c.kms_key else {}),
            }
        return out

    def name_parts(self) -> tuple[str, str]:
        """What goes into the content names of the Model and of the endpoint config: another setting, another
        resource (both are immutable in SageMaker)."""
        return json.dumps(self.model_fields(), sort_keys=True), json.dumps(
            self.config_fields(), sort_keys=True
        )

    def rows(self) -> list[tuple[str, str]]:
        """(setting, value) for a plan or status table: ids, never secrets."""
        out = []
        if self.vpc:
            out.append(
                (
                    "vpc",
                    f"subnets {', '.join(self.vpc.subnets)}; security groups {', '.join(self.vpc.security_groups)}",
                )
            )
        if self.network_isolation:
            out.append(("network isolation", "on: no network in or out of the model container"))
        if self.kms_key:
            out.append(("storage key", self.kms_key))
        c = self.data_capture
        if c:
            out.append(
                ("data capture", f"{c.sampling_percent}% of {' and '.join(c.capture)} to {c.destination}"
                 + (f" (key {c.kms_key})" if c.kms_key else ""))
            )  # fmt: skip
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "vpc": self.vpc.model_dump() if self.vpc else None,
            "network_isolation": self.network_isolation,
            "kms_key": self.kms_key,
            "data_capture": self.data_capture.model_dump() if self.data_capture else None,
        }


def instance_store_gib(instance: str) -> int | None:
    """GiB of instance-store volumes of a hosting type (0: EBS only); None: not known here."""
    data = json.loads(resources.files("smneuron.catalog.data").joinpath("instance_storage.json").read_text())
    return data["instance_store_gib"].get(instance)


def check_plan(
    controls: Controls, instances: list[InstanceType], tags: dict[str, str], *, hub_model: bool = False
) -> list[str]:
    """Refuse what no account would take, before any AWS call; returns notes on what holds with a caveat.

    Raises:
        ConfigError: a storage key for a type whose storage is local (the key would not encrypt it), more tags than a
            resource holds, network isolation for a model the container must download from the Hugging Face Hub.
    """
    notes: list[str] = []
    if len(tags) > TAG_LIMIT:
        raise ConfigError(
            f"{len(tags)} tags with smneuron's own ({', '.join(k for k in tags if k.startswith('smneuron:'))}): a "
            f"SageMaker resource holds at most {TAG_LIMIT} (botocore TagList).",
            hint=f"Give at most {TAG_LIMIT - sum(k.startswith('smneuron:') for k in tags)} tags of your own.",
        )
    if controls.kms_key:
        local = [(i.name, gib) for i in instances if (gib := instance_store_gib(i.name))]
        if local:
            names = ", ".join(f"{n} ({g} GiB of instance store)" for n, g in local)
            raise ConfigError(
                f"kms_key would not encrypt the storage of {names}: their volumes are local NVMe instance store, "
                "encrypted by the instance's own hardware module, and SageMaker's KmsKeyId does not apply to them "
                "(botocore CreateEndpointConfig.KmsKeyId; older API references say the call fails).",
                hint="Drop kms_key for these types (their storage is encrypted anyway), or choose a type with EBS storage "
                "(ml.inf1, ml.inf2, ml.c*/m*/r* without d).",
            )
        unknown = [i.name for i in instances if instance_store_gib(i.name) is None]
        if unknown:
            notes.append(
                f"kms_key: whether {', '.join(unknown)} has instance-store volumes (which the key would not encrypt) "
                "is not known here."
            )
    if controls.network_isolation and hub_model:
        raise ConfigError(
            "network_isolation leaves the container no network, and this artifact names a Hugging Face Hub model "
            "the container would download at start.",
            hint="Compile the model into the artifact (`smneuron compile MODEL_DIR ...` from a local copy) so it is "
            "served from /opt/ml/model, or drop network_isolation.",
        )
    if controls.network_isolation:
        notes.append(
            "network_isolation: the container gets no network, so nothing may be fetched at start; the PyTorch DLC "
            "pip-installs code/requirements.txt (tokenizers) at start and stops if it cannot (sagemaker-inference "
            "_install_requirements), which works only where the image already has tokenizers (not verified here for "
            "the Neuron DLCs)."
        )
    return notes


def check_update(controls: Controls, *, session: Session, current: dict, asynchronous: bool = False) -> None:
    """Refuse an update that would drop a control the live endpoint has (its config's storage key or data capture, its
    Model's VPC or network isolation): an update is never the quiet way to take one off. An asynchronous endpoint
    (``asynchronous``: the plan's is) stays one: SageMaker refuses the update that makes it real-time.

    Raises:
        ConfigError: naming each setting the new plan lacks and what the endpoint has now; a real-time plan for an
            asynchronous endpoint.
    """
    sm = session.client("sagemaker")
    config = sm.describe_endpoint_config(EndpointConfigName=current["EndpointConfigName"])
    if config.get("AsyncInferenceConfig") and not asynchronous:
        name = current["EndpointName"]
        raise ConfigError(
            f"{name} is an asynchronous endpoint, and SageMaker refuses an update that makes it real-time "
            "(UpdateEndpoint's ValidationException: \"The AsyncInferenceConfig parameter cannot be removed from this "
            'endpoint", github.com/aws/sagemaker-python-sdk/pull/3124); the endpoint was not changed.',
            hint=f"Deploy it with --async (endpoint.asynchronous in smneuron.yaml) to update it; for a real-time "
            f"endpoint, deploy under another name, or delete this one first (`smneuron delete {name}`).",
        )
    models = [v["ModelName"] for v in config["ProductionVariants"] if v.get("ModelName")]
    models += [
        c["Specification"]["ModelName"]
        for c in (
            sm.describe_inference_component(InferenceComponentName=s["InferenceComponentName"])
            for s in sm.list_inference_components(EndpointNameEquals=current["EndpointName"])[
                "InferenceComponents"
            ]
        )
        if c.get("Specification", {}).get("ModelName")
    ]
    live = {}
    if config.get("KmsKeyId"):
        live["kms_key"] = config["KmsKeyId"]
    if config.get("DataCaptureConfig", {}).get("EnableCapture", False):
        live["data_capture"] = config["DataCaptureConfig"]["DestinationS3Uri"]
    for name in models:
        model = sm.describe_model(ModelName=name)
        if model.get("VpcConfig"):
            live["vpc"] = ", ".join(model["VpcConfig"]["Subnets"])
        if model.get("EnableNetworkIsolation"):
            live["network_isolation"] = "on"
    wanted = controls.to_dict()
    dropped = {k: v for k, v in live.items() if not wanted[k]}
    if dropped:
        raise ConfigError(
            f"This update of {current['EndpointName']} would drop "
            + ", ".join(f"{k} ({v})" for k, v in dropped.items())
            + ", which the live endpoint has.",
            hint="Give the same settings again (flags, SDK keywords or smneuron.yaml), or delete the endpoint first "
            "to take them off deliberately.",
        )
