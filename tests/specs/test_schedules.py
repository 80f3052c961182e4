"""The schedule grammar (pipelines and scheduled scaling): AWS's cron rules checked before any AWS call, and the next
runs a user can read back (issue 23 #3: an invalid cron went to the API unchecked)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from smneuron.errors import ConfigError
from smneuron.specs.schedules import next_runs, parse

MONDAY_EVENING = datetime(2026, 11, 23, 18, 20, tzinfo=timezone.utc)  # a Monday


@pytest.mark.parametrize(
    ("expression", "runs"),
    [
        ("cron(0 3 ? * MON *)", ["2026-11-30T03:00", "2026-12-07T03:00", "2026-12-14T03:00"]),
        ("cron(0 8 * * ? *)", ["2026-11-24T08:00", "2026-11-25T08:00", "2026-11-26T08:00"]),
        ("cron(*/15 9-17 ? * MON-FRI *)", ["2026-11-24T09:00", "2026-11-24T09:15", "2026-11-24T09:30"]),
        ("cron(30 18 ? * 2 *)", ["2026-11-23T18:30", "2026-11-30T18:30", "2026-12-07T18:30"]),  # 2 = Monday
        ("cron(0 0 1 JAN,JUL ? 2027)", ["2027-01-01T00:00", "2027-07-01T00:00"]),  # only two left that year
        ("rate(12 hours)", ["2026-11-24T06:20", "2026-11-24T18:20", "2026-11-25T06:20"]),
        ("at(2026-12-01T03:00:00)", ["2026-12-01T03:00"]),
        ("cron(0 3 L * ? *)", []),  # the last day of the month: valid, its runs not computed here
    ],
)
def test_next_runs(expression, runs):
    got = next_runs(parse(expression), after=MONDAY_EVENING)
    assert [t.strftime("%Y-%m-%dT%H:%M") for t in got] == runs


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("cron(99 3 * * ? *)", "the minutes field '99' is not valid ('99' is outside 0-59)"),
        ("cron(0 25 ? * MON *)", "the hours field '25' is not valid"),
        ("cron(0 3 ? * FUNDAY *)", "'FUNDAY' is not a number or one of SUN, MON"),
        ("cron(0 3 * * MON *)", "needs `?` in exactly one of day-of-month and day-of-week"),
        ("cron(0 3 ? * ? *)", "needs `?` in exactly one of day-of-month and day-of-week"),
        ("cron(0 3 * *)", "Cannot read the schedule"),
    ],
)
def test_invalid_cron_is_refused_with_the_field_and_the_fix(expression, words):
    with pytest.raises(ConfigError) as e:
        parse(expression)
    assert words in str(e.value) and "cron(0 3 ? * MON *)" in str(e.value)


def test_the_project_files_scheduled_capacity_takes_the_flags_form_and_the_grammar(tmp_path):
    """scaling.scheduled in smneuron.yaml: "cron(...)=2-6" (as --schedule writes it) was "input should be a valid
    dictionary", and {schedule: bogus} was planned and would have reached PutScheduledAction after the endpoint was
    created; both now as --schedule reads them."""
    from smneuron.specs.models import ProjectFile

    def scheduled(entry: str):  # type: ignore[no-untyped-def]
        path = tmp_path / "smneuron.yaml"
        path.write_text(f"scaling:\n  max_capacity: 6\n  scheduled:\n    - {entry}\n")
        return ProjectFile.load(path).scaling.scheduled

    (short,) = scheduled('"cron(0 8 * * ? *)=2-6"')
    assert (short.schedule, short.min_capacity, short.max_capacity) == ("cron(0 8 * * ? *)", 2, 6)
    assert scheduled("{schedule: 'rate(1 day)', min_capacity: 1, max_capacity: 3}")[0].max_capacity == 3
    with pytest.raises(ConfigError, match=r"scheduled\.0\.schedule: Cannot read the schedule 'bogus'"):
        scheduled("{schedule: bogus, min_capacity: 1, max_capacity: 2}")
    with pytest.raises(ConfigError, match=r'is not "schedule expression=min-max"'):
        scheduled('"cron(0 8 * * ? *)"')
