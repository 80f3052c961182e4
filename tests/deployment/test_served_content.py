"""Regression tests for the four bugs the corridor redesign fixed (each failed on the old deploy path)."""

from __future__ import annotations

from smneuron.catalog import INSTANCE_TYPES
from smneuron.compilation.encoder import compile_model
from smneuron.specs.models import EndpointSpec


def _endpoint_model(session, endpoint: str) -> dict:
    sm = session.client("sagemaker")
    config = sm.describe_endpoint(EndpointName=endpoint)["EndpointConfigName"]
    variant = sm.describe_endpoint_config(EndpointConfigName=config)["ProductionVariants"][0]
    return sm.describe_model(ModelName=variant["ModelName"])


def test_recompiling_into_the_same_directory_redeploys_the_new_model(
    tiny_classifier, tmp_path, session, role
):
    """Bug 1: names came from a hash of the path string, so a changed artifact was 'unchanged'."""
    from smneuron.deployment.corridor import deploy

    artifact = tmp_path / "artifact"
    spec = EndpointSpec(name="same-dir", instance_type="ml.c6i.xlarge")
    compile_model(tiny_classifier, artifact, target="cpu", task="text-classification", buckets="16")
    first = deploy(artifact, spec, session=session)
    compile_model(tiny_classifier, artifact, target="cpu", task="text-classification", buckets="16,32")
    second = deploy(artifact, spec, session=session)

    assert not second.unchanged
    assert second.model_data != first.model_data
    served = _endpoint_model(session, "same-dir")["PrimaryContainer"]["ModelDataUrl"]
    assert served == second.model_data
    again = deploy(artifact, spec, session=session)  # the same bytes and settings really are unchanged
    assert again.unchanged and again.model_data == second.model_data


def test_an_uncompressed_package_has_one_hash_and_one_key(tiny_classifier, tmp_path, session, role):
    """Bug 2: packaging and upload hashed the same tree two ways, so the same bytes got two keys."""
    from smneuron.artifact.hashing import tree_hash
    from smneuron.artifact.packaging import package
    from smneuron.artifact.staging import stage

    compile_model(tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16")
    pkg = package(tmp_path / "a", tmp_path / "pkg", compression="none")
    staged_dir = stage(pkg.path, name="m", session=session)
    staged_artifact = stage(tmp_path / "a", name="m", session=session, compression="none")
    assert pkg.sha256 == tree_hash(pkg.path) == staged_dir.sha256 == staged_artifact.sha256
    assert staged_artifact.key == staged_dir.key and staged_artifact.skipped


def test_every_instance_family_caps_host_threads_per_worker():
    """Bug 4: Neuron instances left torch's default thread count in every worker (oversubscription)."""
    from smneuron.container.encoder_env import container_environment

    for name, instance in INSTANCE_TYPES.items():
        if "endpoint" not in instance.uses:
            continue
        env = container_environment(instance, EndpointSpec(instance_type=name))
        workers = int(env["SAGEMAKER_MODEL_SERVER_WORKERS"])
        want = str(max(1, instance.vcpus // workers))
        assert env["OMP_NUM_THREADS"] == want and env["MKL_NUM_THREADS"] == want, name
    inf2 = container_environment(INSTANCE_TYPES["ml.inf2.xlarge"], EndpointSpec())
    assert (inf2["SAGEMAKER_MODEL_SERVER_WORKERS"], inf2["OMP_NUM_THREADS"]) == ("2", "2")
