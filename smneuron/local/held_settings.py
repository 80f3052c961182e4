"""What a running embedded SageMaker was started with, held against what `smneuron local up` asks of it again: a setting
only a start gives (its port, its engines, what it restores, the capacity it lacks, the origins it allows, its metric
period, its quotas) that differs from the running service's is refused with the way to get it, never dropped.
"""

from __future__ import annotations

import urllib.parse

from smneuron.errors import ConfigError

METRIC_PERIODS = (0.5, 60.0)  # seconds: what a period may be (60: AWS's minute)
# what serves encoder endpoints and text-generation copies; the first is what a start takes when none is given
ENGINES = ("smneuron", "torchserve")
LLM_ENGINES = ("stand-in", "vllm")


def same_start(
    running: dict,
    port: int,
    engine: str | None,
    generation_engine: str | None,
    fresh: bool,
    restore_previous: bool,
) -> None:
    """Refuse what only a start does, asked of a running service: another port or engine, or what to restore (the
    running service holds its state; it would have to be stopped for any of them)."""
    now = {
        "--port": (port or None, urllib.parse.urlsplit(running["url"]).port),
        "--engine": (engine, running.get("engine", ENGINES[0])),
        "--llm-engine": (generation_engine, running.get("generation_engine", LLM_ENGINES[0])),
    }
    for flag, (asked, held) in now.items():
        if asked is not None and asked != held:
            raise ConfigError(
                f"The embedded SageMaker already runs with {flag} {held} (pid {running['pid']}), not {asked}.",
                hint=f"Stop it first (`smneuron local down`), then start it with {flag} {asked}.",
            )
    for flag, asked in (("--fresh", fresh), ("--restore-previous", restore_previous)):
        if asked:
            raise ConfigError(
                f"The embedded SageMaker is running (pid {running['pid']}): {flag} chooses what a start restores, and "
                "this one started already with what it holds.",
                hint=f"Stop it first (`smneuron local down`, which keeps what it holds), then `smneuron local up {flag}`.",
            )


def same_period(running: dict, asked: float | None) -> None:
    if asked is not None and float(asked) != float(running.get("metric_period_s", METRIC_PERIODS[1])):
        raise ConfigError(
            f"The embedded SageMaker already runs with a metric period of {running.get('metric_period_s', 60):g} s.",
            hint="Stop it first (`smneuron local down`), then start it with the --metric-period you want.",
        )


def same_quotas(running: dict, asked: dict[str, float] | None) -> None:
    if asked is not None and asked != running.get("quotas", {}):
        raise ConfigError(
            f"The embedded SageMaker already runs holding {len(running.get('quotas', {}))} quota(s), not these.",
            hint="Stop it first (`smneuron local down`), then start it with the --quota you want.",
        )


def same_settings(
    running: dict, origins: list[str] | None, short: list[str], asked: list[str] | None
) -> None:
    """Refuse settings a running service was not started with (it would have to be restarted for them)."""
    if origins is not None and sorted(origins) != sorted(running.get("allowed_origins", [])):
        raise ConfigError(
            f"The embedded SageMaker already runs allowing origins {running.get('allowed_origins') or 'none'}.",
            hint="Stop it first (`smneuron local down`), then start it with the --allow-origin you want.",
        )
    if asked is not None and sorted(short) != sorted(running.get("no_capacity", [])):
        raise ConfigError(
            f"The embedded SageMaker already runs with no capacity for {running.get('no_capacity') or 'nothing'}.",
            hint="Stop it first (`smneuron local down`), then start it with the --no-capacity you want.",
        )
