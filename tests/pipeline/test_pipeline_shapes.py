"""The pipeline compiles the shapes `smneuron compile` would choose (one question, one answer): from the project's model
folder when it has one; when the model is read only as the pipeline runs, the definition says the size class is unknown
and which keys set the shapes."""

from __future__ import annotations

import pytest

from smneuron.errors import ConfigError
from smneuron.pipeline.plan import plan as pipeline_plan
from smneuron.specs.models import ProjectFile


def _project(**more) -> ProjectFile:
    return ProjectFile.model_validate(
        {"endpoint": {"instance_type": "ml.inf2.xlarge"}, "compile": {"task": "text-classification"}, **more}
    )


def test_the_pipeline_compiles_the_shapes_compile_chooses_from_the_model_folder(
    session, role, tiny_classifier
):
    from smneuron.compilation.entry import compile_model

    p = pipeline_plan(_project(model=str(tiny_classifier)), session=session)
    cli = compile_model(tiny_classifier, None, target="inf2", task="text-classification", dry_run=True).spec
    assert (p.defaults["BatchSize"], p.defaults["Buckets"]) == (
        cli.batch_size,
        ",".join(map(str, cli.buckets)),
    )
    assert p.config["compile"]["batch_sizes"] == [1] and cli.all_batch_sizes == [1, cli.batch_size]
    assert any(n.startswith(f"shapes: batch {cli.batch_size} (small model") for n in p.notes)
    # the served batch is the compiled one: the Model's environment batches as the artifact was compiled
    assert p.model_environment["SAGEMAKER_TS_BATCH_SIZE"] == str(cli.batch_size)


def test_without_the_model_folder_the_definition_says_what_it_cannot_know(session, role):
    p = pipeline_plan(_project(), session=session)
    assert (p.defaults["BatchSize"], p.defaults["Buckets"]) == (1, "128")
    said = next(n for n in p.notes if n.startswith("shapes:"))
    assert "size class" in said and "compile.batch_size" in said and "compile.buckets" in said
    chosen = _project(
        compile={"task": "text-classification", "batch_size": 4, "batch_sizes": [1], "buckets": [64]}
    )
    assert not any(n.startswith("shapes:") for n in pipeline_plan(chosen, session=session).notes)


def test_the_deploy_steps_quota_is_said_as_the_account_stands(session, role):
    """The pipeline deploys later, on a schedule: a quota its deploy step would pass is said in the plan (deploy itself
    refuses it); a quota that fits says nothing."""
    from smneuron.local.aws.embedded_service import EmbeddedService, serving
    from smneuron.local.aws.engine.quotas import QuotaBook

    with serving(EmbeddedService(quotas=QuotaBook({"ml.inf2.xlarge for endpoint usage": 0.0}))):
        said = pipeline_plan(_project(), session=session).notes
    (note,) = [n for n in said if "deploy step" in n]
    assert note.startswith(
        "The deploy step would be refused as the account stands now: the deploy step (endpoint"
    )
    assert "'ml.inf2.xlarge for endpoint usage' is 0" in note and "request-service-quota-increase" in note


def test_a_causal_lms_sequence_length_is_fitted_to_the_model_as_compile_fits_it(session, role, tiny_llama):
    """The pipeline compiled text generation at the default 4096 tokens, and its compile step refused a model of 512
    positions with a traceback in the job's log; the plan now fits the default as `smneuron compile` does, said, and
    refuses a chosen length the model cannot take before anything runs."""
    from smneuron.compilation.entry import compile_model

    project = {"endpoint": {"instance_type": "ml.inf2.xlarge"}, "compile": {"task": "text-generation"},
               "model": str(tiny_llama)}  # fmt: skip
    p = pipeline_plan(ProjectFile.model_validate(project), session=session)
    cli = compile_model(tiny_llama, None, target="inf2", dry_run=True).spec
    assert p.config["compile"]["sequence_length"] == cli.sequence_length == 512
    assert any(
        n.startswith("shapes: sequence length 512: the model's max_position_embeddings") for n in p.notes
    )
    project["compile"]["sequence_length"] = 4096
    with pytest.raises(
        ConfigError, match="compile.sequence_length 4096 exceeds the model's max_position_embeddings"
    ):
        pipeline_plan(ProjectFile.model_validate(project), session=session)


def test_a_task_given_on_the_command_line_leaves_the_shapes_to_compiles_choice(
    session, role, tiny_classifier
):
    """`smneuron pipeline definition --task ...` overrides the project's compile section; the override made every field
    look chosen (its copy set them all), so the pipeline compiled CompileSpec's batch 1 x bucket 128 where `smneuron
    compile` chooses from the model's size class. What was given now stays what was given."""
    from smneuron.compilation.entry import compile_model
    from smneuron.specs.validation import override

    project = ProjectFile.model_validate(
        {"endpoint": {"instance_type": "ml.inf2.xlarge"}, "model": str(tiny_classifier)}
    )
    project = project.model_copy(update={"compile": override(project.compile, task="text-classification")})
    assert project.compile.model_fields_set == {"task"}
    p = pipeline_plan(project, session=session)
    cli = compile_model(tiny_classifier, None, target="inf2", task="text-classification", dry_run=True).spec
    assert (p.defaults["BatchSize"], p.defaults["Buckets"]) == (
        cli.batch_size,
        ",".join(map(str, cli.buckets)),
    )
    assert (cli.batch_size, cli.buckets) != (
        1,
        [128],
    )  # the size class chose otherwise than CompileSpec's defaults
