"""Write tests/durations.json from a run's JUnit XML: the tests that take 3 s or more, by node id.

    .venv/bin/pytest -n 3 --junitxml=/tmp/run.xml && .venv/bin/python scripts/test_durations.py /tmp/run.xml

tests/conftest.py orders the collection by these (slowest first, dealt across the xdist workers). A stale file
costs time at the end of a run, never coverage.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "durations.json"


def main(junit: str) -> None:
    found = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        path = "/".join(p for p in parts if not p[:1].isupper()) + ".py"
        seconds = float(case.get("time", 0))
        if seconds >= 3:
            found[f"{path}::{case.get('name')}"] = round(seconds)
    ordered = dict(sorted(found.items(), key=lambda kv: (-kv[1], kv[0])))
    OUT.write_text(json.dumps(ordered, indent=1) + "\n")
    print(f"{len(ordered)} tests of 3 s or more -> {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
