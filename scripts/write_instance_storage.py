"""Write smneuron/catalog/data/instance_storage.json: which hosting types have instance-store (local NVMe) volumes.

Source: EC2 DescribeInstanceTypes (InstanceStorageSupported, InstanceStorageInfo.TotalSizeInGB) as moto ships it
(moto/ec2/resources/instance_types.json.gz). SageMaker's KmsKeyId does not encrypt such local storage (botocore's
CreateEndpointConfig.KmsKeyId documentation), so the deploy checks read it. Run: python scripts/write_instance_storage.py
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
from pathlib import Path

import moto

from smneuron.catalog import INSTANCE_TYPES

OUT = Path(__file__).parents[1] / "smneuron" / "catalog" / "data" / "instance_storage.json"


def main() -> None:
    data = json.load(
        gzip.open(os.path.join(os.path.dirname(moto.__file__), "ec2", "resources", "instance_types.json.gz"))
    )
    found, unknown = {}, []
    for name in sorted(INSTANCE_TYPES):
        e = data.get(name.removeprefix("ml."))
        if e is None:
            unknown.append(name)
            continue
        found[name] = (
            e.get("InstanceStorageInfo", {}).get("TotalSizeInGB", 0)
            if e.get("InstanceStorageSupported")
            else 0
        )
    doc = {
        "source": f"EC2 DescribeInstanceTypes InstanceStorageInfo.TotalSizeInGB (0: EBS only), as moto {moto.__version__} "
        f"ships it in moto/ec2/resources/instance_types.json.gz; read {dt.date.today()}",
        "unknown": f"types not in that data ({', '.join(unknown)}) are not listed: whether they have instance storage "
        "is not known here",
        "instance_store_gib": found,
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
