from __future__ import annotations

import sys
from pathlib import Path

import pytest

from smneuron.errors import ConfigError
from smneuron.specs.models import CompileSpec, EndpointSpec, ProjectFile, ScalingSpec, override

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "smneuron.yaml"
    p.write_text(text)
    return p


def test_project_file_round_trip(tmp_path):
    p = write(
        tmp_path,
        """
model: ./my-model
compile:
  target: inf1
  task: text-classification
  buckets: "128,32,64"
  batch_size: 4
endpoint:
  instance_type: inf1.6xlarge
scaling: {min_capacity: 1, max_capacity: 4}
""",
    )
    pf = ProjectFile.load(p)
    assert pf.compile.buckets == [32, 64, 128]
    assert pf.endpoint.instance_type == "ml.inf1.6xlarge"
    assert pf.scaling.max_capacity == 4


def test_unknown_keys_suggest_the_right_one(tmp_path):
    p = write(tmp_path, "compile:\n  targt: inf2\nendpont: {}\n")
    with pytest.raises(ConfigError) as e:
        ProjectFile.load(p)
    msg = str(e.value)
    assert "compile.targt" in msg and "Did you mean 'target'" in msg
    assert "Did you mean 'endpoint'" in msg
    assert str(p) in msg
    assert "?." not in msg and ".." not in msg  # one stop after a question


def test_duplicate_keys_are_refused(tmp_path):
    p = write(tmp_path, "compile:\n  target: inf2\n  target: inf1\n")
    with pytest.raises(ConfigError, match="duplicate key 'target' at line 3"):
        ProjectFile.load(p)


def test_a_file_that_is_not_yaml_says_where_and_what(tmp_path):
    """It printed PyYAML's message as is, with `in "<unicode string>"` for the file it had just named."""
    p = write(tmp_path, "endpoint:\n  name: a\n   bad: 1\n")
    with pytest.raises(ConfigError) as e:
        ProjectFile.load(p)
    said = str(e.value)
    assert f"{p} is not valid YAML: mapping values are not allowed here (line 3, column 7)." in said
    assert "<unicode string>" not in said and "docs/settings.md" in said


def test_bad_values_are_reported_together(tmp_path):
    p = write(tmp_path, "compile:\n  batch_size: 0\nendpoint:\n  instance_type: ml.inf2.xlarg\n")
    with pytest.raises(ConfigError) as e:
        ProjectFile.load(p)
    assert "compile.batch_size" in str(e.value) and "ml.inf2.xlarge" in str(e.value)


def test_flags_override_file_values():
    # the flags a refusal names come from the verbs' tables (specs.validation.FLAGS): loaded here as the CLI loads them,
    # so that this test holds alone as well as after the modules that import them (it failed when run by itself)
    import smneuron.specs.compile_settings
    import smneuron.specs.deploy_settings  # noqa: F401

    spec = CompileSpec(target="inf2", batch_size=2)
    new = override(spec, batch_size=8, target=None, buckets="64,32")
    assert (new.batch_size, new.target, new.buckets) == (8, "inf2", [32, 64])
    with pytest.raises(ConfigError) as e:  # in the user's words: the flag, the key, the limit, the value
        override(spec, batch_size=-1)
    assert str(e.value) == "--batch-size (compile.batch_size) must be at least 1, got -1."
    with pytest.raises(ConfigError) as e:
        override(ScalingSpec(), min_capacity=5, max_capacity=2)
    assert "Input should" not in str(e.value) and "Value error" not in str(e.value)
    assert "--max (max_capacity) is 2, below --min (min_capacity) 5" in str(e.value)


def test_spec_invariants():
    with pytest.raises(ConfigError):
        override(ScalingSpec(), min_capacity=4, max_capacity=2)
    with pytest.raises(ConfigError, match="processing"):
        override(ProjectFile().pipeline, compile_instance_type="ml.inf2.xlarge")
    assert EndpointSpec().instance_type == "ml.inf2.xlarge"


def test_every_field_is_described():
    def walk(model):
        for name, f in model.model_fields.items():
            assert f.description, f"{model.__name__}.{name} has no description"
            ann = f.annotation
            if isinstance(ann, type) and hasattr(ann, "model_fields"):
                walk(ann)

    walk(ProjectFile)


def test_json_schema_in_repo_is_current():
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import write_schema
    finally:
        sys.path.pop(0)
    assert write_schema.SCHEMA_PATH.read_text() == write_schema.render(), (
        "docs/smneuron.schema.json is stale: run `python scripts/write_schema.py`"
    )
    assert write_schema.SETTINGS_PATH.read_text() == write_schema.render_settings(), (
        "docs/settings.md is stale: run `python scripts/write_schema.py`"
    )
