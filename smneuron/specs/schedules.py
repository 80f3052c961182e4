"""One schedule grammar for autoscaling's scheduled actions and pipeline schedules.

Both Application Auto Scaling and EventBridge Scheduler read ``cron(6 fields)``, ``rate(N unit)``
and ``at(YYYY-MM-DDTHH:MM:SS)``; smneuron checks that grammar here, once, before any AWS call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

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
        _check_cron(m[2].split(), text)
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


_MONTHS = {m: i + 1 for i, m in enumerate("JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC".split())}
_DAYS = {d: i + 1 for i, d in enumerate("SUN MON TUE WED THU FRI SAT".split())}  # AWS: 1 = Sunday
_FIELDS = (  # name, low, high, names
    ("minutes", 0, 59, {}),
    ("hours", 0, 23, {}),
    ("day-of-month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day-of-week", 1, 7, _DAYS),
    ("year", 1970, 2199, {}),
)


def _values(spec: str, low: int, high: int, names: dict[str, int]) -> set[int] | None:
    """The values one cron field allows, or None for the forms that depend on the month (L, W, #)."""
    if any("#" in part or part.upper() in ("L", "LW") or re.fullmatch(r"\d+[LW]", part.upper())
           for part in spec.split(",")):  # fmt: skip
        return None
    out: set[int] = set()
    for part in spec.split(","):
        rng, _, step = part.partition("/")
        if rng in ("*", "?"):
            a, b = low, high
        else:
            first, _, last = rng.partition("-")
            a = _number(first, names)
            b = _number(last, names) if last else (high if step else a)
        n = _number(step, {}) if step else 1
        if not (low <= a <= high and low <= b <= high) or n < 1:
            raise ValueError(f"{part!r} is outside {low}-{high}")
        out.update(range(a, b + 1, n))
    return out


def _number(text: str, names: dict[str, int]) -> int:
    if text.upper() in names:
        return names[text.upper()]
    if not text.isdigit():
        named = f" or one of {', '.join(names)}" if names else ""
        raise ValueError(f"{text!r} is not a number{named}")
    return int(text)


def _check_cron(fields: list[str], text: str) -> list[set[int] | None]:
    """AWS's cron rules (six fields; day-of-month and day-of-week: one of them must be ``?``), values in range."""
    values = []
    for spec, (name, low, high, names) in zip(fields, _FIELDS, strict=True):
        try:
            values.append(_values(spec, low, high, names))
        except ValueError as e:
            raise ConfigError(
                f"Cannot read the schedule {text!r}: the {name} field {spec!r} is not valid ({e}).",
                hint=f"Fields: minutes hours day-of-month month day-of-week year. Use {FORMS}.",
            ) from None
    if (fields[2] == "?") == (fields[4] == "?"):
        raise ConfigError(
            f"Cannot read the schedule {text!r}: AWS needs `?` in exactly one of day-of-month and day-of-week.",
            hint='E.g. "cron(0 3 ? * MON *)" (Mondays) or "cron(0 3 1 * ? *)" (the 1st of each month).',
        )
    return values


def next_runs(schedule: Schedule, count: int = 3, after: datetime | None = None) -> list[datetime]:
    """The next ``count`` times (UTC) the schedule fires after ``after`` (default now); empty when the expression
    uses L, W or # (those depend on the month: not computed here)."""
    now = (after or datetime.now(timezone.utc)).replace(second=0, microsecond=0)
    if schedule.kind == "at":
        at = schedule.at if schedule.at.tzinfo else schedule.at.replace(tzinfo=timezone.utc)  # type: ignore[union-attr]
        return [at] if at > now else []
    if schedule.kind == "rate":
        n, unit = schedule.rate  # type: ignore[misc]
        step = timedelta(**{unit.rstrip("s") + "s": n})
        return [now + step * (i + 1) for i in range(count)]
    minutes, hours, dom, months, dow, years = _check_cron(schedule.cron.split(), schedule.text)  # type: ignore[union-attr]
    if None in (minutes, hours, dom, months, dow, years):
        return []
    out: list[datetime] = []
    day = now.replace(hour=0, minute=0)
    fields = schedule.cron.split()  # type: ignore[union-attr]
    for _ in range(366 * 8):
        aws_dow = (day.weekday() + 1) % 7 + 1
        if (
            day.year in years  # type: ignore[operator]
            and day.month in months  # type: ignore[operator]
            and (fields[2] == "?" or day.day in dom)  # type: ignore[operator]
            and (fields[4] == "?" or aws_dow in dow)  # type: ignore[operator]
        ):
            for h in sorted(hours):  # type: ignore[arg-type]
                for m in sorted(minutes):  # type: ignore[arg-type]
                    t = day.replace(hour=h, minute=m)
                    if t > now:
                        out.append(t)
                        if len(out) == count:
                            return out
        day += timedelta(days=1)
    return out
