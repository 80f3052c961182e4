"""A bench's settings, checked once for every way in (the CLI, ``smneuron.bench_endpoint``, compare), before any load:

- its numbers (``check_numbers``): a count below one, a negative time or price, a rate or an SLO of zero is refused
  naming the setting as the user gave it. Each of them ran: ``--concurrency 0`` measured a sweep anyway, ``--rate -5``
  ran and sent nothing, ``--max-requests 0`` reported every request failed;
- its load settings against the profile (``check_profile``): ``--rate`` on a synchronous run, ``--concurrencies`` on a
  constant one, ``--precision`` without ``--find-max`` were dropped without a word.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from smneuron.errors import ConfigError

# keyword -> the CLI's flag, for the messages
FLAGS = {
    "concurrency": "--concurrency",
    "concurrencies": "--concurrencies",
    "rate": "--rate",
    "rates": "--rates",
    "precision": "--precision",
    "warmup_s": "--warmup",
    "cooldown_s": "--cooldown",
    "max_requests": "--max-requests",
    "max_errors": "--max-errors",
    "processes": "--processes",
    "instance_count": "--instance-count",
    "copies": "--copies",
    "copies_per_instance": "--copies-per-instance",
    "tensor_parallel_size": "--tensor-parallel-size",
    "price": "--price",
    "slo_p99_ms": "--slo-p99-ms",
    "slo_ttft_ms": "--slo-ttft-ms",
    "slo_itl_ms": "--slo-itl-ms",
    "slo_latency_ms": "--slo-latency-ms",
    "mean_tokens": "--mean-tokens",
    "spread": "--spread",
    "goodput_target": "--goodput-target",
}
# keyword -> (the least value, whether the least itself is allowed); ``concurrencies``: each level
LEAST: dict[str, tuple[float, bool]] = {
    "concurrency": (1, True),
    "concurrencies": (1, True),
    "rate": (0, False),
    "rates": (1, True),
    "warmup_s": (0, True),
    "cooldown_s": (0, True),
    "max_requests": (1, True),
    "max_errors": (1, True),
    "processes": (1, True),
    "instance_count": (1, True),
    "copies": (1, True),
    "copies_per_instance": (1, True),
    "tensor_parallel_size": (1, True),
    "price": (0, True),
    "slo_p99_ms": (0, False),
    "slo_ttft_ms": (0, False),
    "slo_itl_ms": (0, False),
    "slo_latency_ms": (0, False),
    "mean_tokens": (1, True),
    "spread": (0, True),
}


def _label(key: str, where: str) -> str:
    return FLAGS[key] if where == "cli" else f"{key}="


def check_numbers(settings: Mapping[str, Any], *, where: str = "sdk") -> None:
    """Refuse any number in ``settings`` (keyword -> value; None: not given) below what it may be.

    Args:
        settings: the bench's keywords as ``bench_endpoint`` takes them.
        where: "cli" names flags (``--concurrency``), "sdk" keywords (``concurrency=``).

    Raises:
        ConfigError: the first number out of range, with the least it may be.
    """
    for key, value in settings.items():
        if value is None:
            continue
        if key == "goodput_target" and not (_number(value) and 0 < value <= 1):
            raise ConfigError(
                f"{_label(key, where)} is a share of the requests, above 0 and at most 1, got {value!r}.",
                hint="For example 0.99: 99% of the requests meet the SLOs.",
            )
        if key in LEAST:
            for one in value if key == "concurrencies" else [value]:
                _check(key, one, where)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check(key: str, value: Any, where: str) -> None:
    least, inclusive = LEAST[key]
    if _number(value) and (value >= least if inclusive else value > least):
        return
    label = _label(key, where)
    raise ConfigError(
        f"{label} must be a number {'of at least' if inclusive else 'above'} {least:g}, got {value!r}.",
        hint=f"Give {label} a value in range, or leave it out for its default.",
    )


# what each profile reads of the load settings; any other one given would be dropped
LOAD = ("concurrency", "concurrencies", "rate", "rates", "precision", "slo_p99_ms")
READS = {
    "synchronous": set(),
    "concurrent": {"concurrencies"},
    "throughput": {"concurrency"},
    "constant": {"rate"},
    "poisson": {"rate"},
    "sweep": {"concurrency", "rates"},
    "find-max": {"concurrency", "rate", "precision", "slo_p99_ms"},
}


def check_profile(profile: str, settings: Mapping[str, Any], *, where: str = "sdk") -> None:
    """Refuse the load settings given (keys of ``settings``) that ``profile`` does not read.

    Raises:
        ConfigError: naming each such setting and the profiles that read it.
    """
    if profile not in READS:
        return  # an unknown profile is refused by the runner, with the list
    unread = [k for k in LOAD if k in settings and k not in READS[profile]]
    if not unread:
        return
    said = []
    for key in unread:
        readers = [p for p, keys in READS.items() if key in keys]
        said.append(f"{_label(key, where)} (read by {', '.join(readers)})")
    raise ConfigError(
        f"The {profile} profile does not read {'; '.join(said)}: it would be dropped.",
        hint="Remove it, or choose a profile that reads it"
        + (" (--rate-type; --find-max for the search)." if where == "cli" else " (profile=)."),
    )
