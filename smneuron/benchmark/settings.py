"""A bench's load settings against its profile (``check_profile``), checked once for every way in (the CLI,
``smneuron.bench``, compare) before any load: ``--rate`` on a synchronous run, ``--concurrencies`` on a constant one,
``--precision`` without ``--find-max`` were dropped without a word. Numbers out of range are the table's to refuse
(``specs.bench_settings.BENCH``: ``--concurrency 0`` measured a sweep anyway, ``--rate -5`` ran and sent nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from smneuron.errors import ConfigError, UsageError
from smneuron.specs.bench_settings import BENCH, LOAD, READS


def check_profile(profile: str, settings: Mapping[str, Any], *, where: str = "sdk") -> None:
    """Refuse the load settings given (keys of ``settings``) that ``profile`` does not read, and an open-loop profile
    without its rate: both before anything is deployed or sent.

    Raises:
        ConfigError: naming each such setting and the profiles that read it.
        UsageError: constant or poisson without a rate.
    """
    if profile not in READS:
        return  # an unknown profile is refused by the runner, with the list
    if profile in ("constant", "poisson") and not settings.get("rate"):
        label = BENCH["rate"].label(where)
        raise UsageError(
            f"The {profile} profile sends at a rate: give {label} (requests per second).",
            hint=f"Add {label} 20, say, or use a closed-loop profile (synchronous, concurrent, throughput, sweep).",
        )
    unread = [k for k in LOAD if k in settings and k not in READS[profile]]
    if not unread:
        return
    said = []
    for key in unread:
        readers = [p for p, keys in READS.items() if key in keys]
        said.append(f"{BENCH[key].label(where)} (read by {', '.join(readers)})")
    raise ConfigError(
        f"The {profile} profile does not read {'; '.join(said)}: it would be dropped.",
        hint="Remove it, or choose a profile that reads it"
        + (" (--rate-type; --find-max for the search)" if where == "cli" else " (profile=)")
        + (
            f"; `compare` sizes its fleet for {'--target-rps' if where == 'cli' else 'target_rps='}."
            if "rate" in unread
            else "."
        ),
    )
