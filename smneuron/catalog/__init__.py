"""What smneuron knows about hardware: instance types, prices, serving images, and capacity arithmetic.

Modules: ``instances`` (``InstanceType`` parsed once from a name), ``prices`` (data with a source and a
date, overridable), ``images`` (the PyTorch DLCs per region, pinned), ``generation`` (the optimum-neuron
vLLM image, HBM per NeuronCore, accelerators per copy), ``capacity`` (does a text-generation layout fit
an instance: weights, KV cache, head sharding, as optimum-neuron computes them). Capacity lives here,
not in deploy/, because compile (the smallest instance that fits) and deploy (refusals) both need it.

May import: ``smneuron.errors``, and ``smneuron.session`` for botocore's models (read once per process). Everything
else in smneuron may import it.
"""

from smneuron.catalog.images import (
    DEFAULT_REGISTRY,
    IMAGES,
    KNOWN_REGIONS,
    REGISTRY_ACCOUNTS,
    Image,
    ImageVersion,
    image_versions,
    registry_account,
    resolve_image,
)
from smneuron.catalog.instances import INSTANCE_TYPES, Family, InstanceType, Target, Use
from smneuron.catalog.prices import PriceTable, load_prices, price_table

__all__ = [
    "DEFAULT_REGISTRY",
    "IMAGES",
    "REGISTRY_ACCOUNTS",
    "INSTANCE_TYPES",
    "KNOWN_REGIONS",
    "Family",
    "Image",
    "ImageVersion",
    "InstanceType",
    "PriceTable",
    "Target",
    "Use",
    "image_versions",
    "load_prices",
    "price_table",
    "registry_account",
    "resolve_image",
]
