"""Write the JSON schema of smneuron.yaml to docs/smneuron.schema.json (a test fails when stale)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "docs" / "smneuron.schema.json"


def render() -> str:
    from smneuron.specs.models import ProjectFile

    schema = ProjectFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "smneuron.yaml"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    SCHEMA_PATH.write_text(render())
    print(f"wrote {SCHEMA_PATH}", file=sys.stderr)
