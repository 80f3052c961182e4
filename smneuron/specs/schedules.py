"""One schedule grammar for autoscaling's scheduled actions and pipeline schedules.

Both Application Auto Scaling and EventBridge Scheduler read ``cron(6 fields)``, ``rate(N unit)``
and ``at(YYYY-MM-DDTHH:MM:SS)``; smneuron checks that grammar here, once, before any AWS call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from smneuron.errors import ConfigError

FORMS = '"cron(0 3 ? * MON *)" (6 fields), "rate(1 day)" or "at(2026-12-01T03:00:00)"'
_EXPR = re.compile(r"^(cron|rate|at)\((.+)\)$")
_RATE = re.compile(r"^(\d+)\s+(minutes?|hours?|days?)$")


@dataclass(frozen=True)
class Schedule:
    kind: str  # cron | rate | at
    text: str  # the expression as AWS reads it, e.g. "cron(0 8 * * ? *)"
    cron: str | None = None
    rate: tuple[int, str] | None = None
    at: datetime | None = None

    def pipeline_kwargs(self) -> dict:
        """Keywords of the SageMaker SDK's ``PipelineSchedule``."""
        return {self.kind: getattr(self, self.kind)}


def parse(expression: str) -> Schedule:
    """Read a schedule expression.

    Raises:
        ConfigError: anything but the three forms, with the forms.
    """
    text = expression.strip()
    m = _EXPR.match(text)
    if m and m[1] == "cron" and len(m[2].split()) == 6:
        return Schedule("cron", text, cron=m[2].strip())
    if m and m[1] == "rate":
        r = _RATE.match(m[2].strip())
        if r and int(r[1]) > 0:
            return Schedule("rate", text, rate=(int(r[1]), r[2]))
    if m and m[1] == "at":
        try:
            return Schedule("at", text, at=datetime.fromisoformat(m[2].strip()))
        except ValueError:
            pass
    raise ConfigError(f"Cannot read the schedule {expression!r}.", hint=f"Use {FORMS}.")
