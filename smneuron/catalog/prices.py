"""Hourly prices of hosting instance types: data with a source and a date (``data/prices.json``), overridable."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from smneuron.errors import ConfigError
from smneuron.files.user import read_text, yaml_problem


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

    def quote(self, instance: str | None, given: float | None = None) -> tuple[float | None, str | None]:
        """(hourly USD, where it comes from) for ``instance``: ``given`` (a --price flag) over this table."""
        if given is not None:
            return given, "given with --price"
        hourly = self.hourly(instance) if instance else None
        return hourly, (self.source_of(instance) if hourly is not None and instance else None)

    def for_report(self, report: Mapping) -> float | None:
        """The hourly price to cost a saved bench report with: a price given to that bench (--price) as recorded;
        else this table's override for its type (the project's prices today); else what the report recorded; else
        this table's figure."""
        instance = report.get("instance_type")
        if report.get("price_source") == "given with --price" or not instance:
            return report.get("hourly_usd")
        if instance in self.overridden:
            return self.hourly(instance)
        return report.get("hourly_usd") or self.hourly(instance)

    def with_overrides(self, overrides: Mapping[str, float] | None) -> PriceTable:
        """This table with ``overrides`` (instance type -> hourly USD) over it; itself when there are none."""
        if not overrides:
            return self
        given = {str(k): float(v) for k, v in overrides.items()}
        changed = tuple(dict.fromkeys((*self.overridden, *given)))
        source = self.source if self.overridden else self.source + " + user overrides"
        return replace(
            self,
            hourly_usd={**self.hourly_usd, **given},
            source=source,
            overridden=changed,
            estimated=tuple(n for n in self.estimated if n not in given),
        )


def prices_for(
    given: PriceTable | Mapping[str, float] | None = None,
    *,
    project: Mapping[str, float] | None = None,
    session: Any = None,
) -> PriceTable:
    """The one price table every cost is read from, with one precedence: ``given`` (an SDK argument, `--price
    TYPE=USD`) over ``project`` (smneuron.yaml's ``prices:``) over the ``session``'s (``price_overrides``: the CLI's
    session carries the project's) over the catalog (``SMNEURON_PRICES_FILE`` over the built-in list). A table given is
    taken whole. Each figure's source (``source_of``, ``quote``) says which it came from."""
    if isinstance(given, PriceTable):
        return given
    layers = {**(getattr(session, "price_overrides", None) or {}), **(project or {}), **(given or {})}
    return load_prices(layers or None)


def price_table(prices: PriceTable | Mapping[str, float] | None = None) -> PriceTable:
    """``prices`` as a table: a table as it is; overrides over the catalog's (``load_prices``); None: the catalog's."""
    return prices if isinstance(prices, PriceTable) else load_prices(dict(prices) if prices else None)


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
        import yaml  # loaded when a price file is read, not for a command's --help

        try:
            loaded = yaml.safe_load(read_text(file, "the price file")) or {}
        except yaml.YAMLError as e:
            raise ConfigError(f"The price file {file} is not valid YAML: {yaml_problem(e)}.") from None
        except OSError as e:
            raise ConfigError(f"Cannot read the price file {file}: {e}") from e
        loaded = loaded.get("hourly_usd", loaded)
        prices.update({str(k): float(v) for k, v in loaded.items()})
        changed += list(loaded)
    source = data["source"] if not changed else data["source"] + " + user overrides"
    guesses = tuple(n for n in estimated.get("hourly_usd", {}) if n not in changed)
    table = PriceTable(
        prices, source, data["as_of"], data["region"], tuple(changed), guesses, estimated.get("source", "")
    )
    return table.with_overrides(overrides)
