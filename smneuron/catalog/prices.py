"""Hourly prices of hosting instance types: data with a source and a date (``data/prices.json``), overridable."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml

from smneuron.errors import ConfigError


@dataclass(frozen=True)
class PriceTable:
    hourly_usd: dict[str, float]
    source: str
    as_of: str
    region: str
    overridden: tuple[str, ...] = field(default=())
    estimated: tuple[str, ...] = field(default=())
    estimate_source: str = ""

    def hourly(self, instance: str) -> float | None:
        return self.hourly_usd.get(instance)

    def source_of(self, instance: str) -> str:
        """Where the figure for ``instance`` comes from (user override, list price, or estimate)."""
        if instance in self.overridden:
            return "user override"
        if instance in self.estimated:
            return self.estimate_source
        return self.source if instance in self.hourly_usd else "no price known"


@lru_cache(maxsize=8)
def _builtin_prices() -> dict:
    return json.loads(resources.files("smneuron.catalog.data").joinpath("prices.json").read_text())


def load_prices(overrides: dict[str, float] | None = None, file: str | Path | None = None) -> PriceTable:
    """The price table: built-in data, then ``file`` (or SMNEURON_PRICES_FILE), then ``overrides``.

    The file is JSON or YAML mapping instance type -> hourly USD (optionally under ``hourly_usd``).
    """
    data = _builtin_prices()
    estimated = data.get("estimated", {})
    prices = {**estimated.get("hourly_usd", {}), **data["hourly_usd"]}
    changed: list[str] = []
    file = file or os.environ.get("SMNEURON_PRICES_FILE")
    if file:
        try:
            loaded = yaml.safe_load(Path(file).read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"Cannot read the price file {file}: {e}") from e
        loaded = loaded.get("hourly_usd", loaded)
        prices.update({str(k): float(v) for k, v in loaded.items()})
        changed += list(loaded)
    if overrides:
        prices.update(overrides)
        changed += list(overrides)
    source = data["source"] if not changed else data["source"] + " + user overrides"
    guesses = tuple(n for n in estimated.get("hourly_usd", {}) if n not in changed)
    return PriceTable(
        prices, source, data["as_of"], data["region"], tuple(changed), guesses, estimated.get("source", "")
    )
