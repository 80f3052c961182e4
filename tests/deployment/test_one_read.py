"""Issue 61 #1: each verb reads an endpoint once. Every botocore call a command makes is counted (in process, the CLI
as users run it, against moto): before it acts, a verb describes the endpoint once and reads its scaling state at most
once. (``delete`` then waits for the endpoint to go: those polls come after its DeleteEndpoint and are not reads of the
record.)"""

from __future__ import annotations

import collections
import json

import botocore.client
import pytest
from conftest import cache_llama_8b, run_cli
from test_encoder_deploy import retarget

from smneuron.compilation.encoder import compile_model as compile_encoder
from smneuron.compilation.generation import compile_from_cache
from smneuron.deployment import corridor as dp
from smneuron.specs.models import CompileSpec, EndpointSpec, GenerationSpec, ScalingSpec

READS = ("DescribeEndpoint", "DescribeScalableTargets", "ListInferenceComponents", "ListTags")


@pytest.fixture
def counted(monkeypatch):
    """Every botocore call of this process, in order (the CLI's sessions are its own: the count is at the client)."""
    calls: list[str] = []
    real = botocore.client.BaseClient._make_api_call

    def make_api_call(self, name, params):  # type: ignore[no-untyped-def]
        calls.append(name)
        return real(self, name, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", make_api_call)
    return calls


@pytest.fixture
def endpoints(tiny_classifier, optimum_standin, llama_8b, tmp_path, monkeypatch, session, role):
    d = tmp_path / "enc"
    compile_encoder(tiny_classifier, d / "a", target="cpu", task="text-classification", buckets="16")
    dp.deploy(retarget(d / "a", d, "inf2"), EndpointSpec(name="enc", instance_type="ml.inf2.xlarge"),
              ScalingSpec(min_capacity=1, max_capacity=2), session=session)  # fmt: skip
    cache_llama_8b(monkeypatch)
    spec = CompileSpec(task="text-generation", batch_size=4, sequence_length=4096, tensor_parallel_size=8)
    llm = compile_from_cache(str(llama_8b), tmp_path / "hub", spec).out_dir
    dp.deploy(llm, EndpointSpec(name="chat", instance_type="ml.inf2.48xlarge", generation=GenerationSpec(copies=1)),
              session=session)  # fmt: skip
    data = tmp_path / "d.jsonl"
    data.write_text('{"inputs": "hello", "label": "POSITIVE"}\n')
    return data


def _reads(calls: list[str], until: str | None = None) -> dict[str, int]:
    """The reads a command made before it acted on the endpoint: before ``until`` (delete: its DeleteEndpoint, after
    removing the autoscaling it read), else before its first call that is not a read."""
    before: list[str] = []
    for name in calls:
        if name == until or (
            until is None and name.startswith(("Delete", "Register", "Put", "Update", "Create", "Invoke"))
        ):
            break
        before.append(name)
    return {k: v for k, v in collections.Counter(before).items() if k in READS}


@pytest.mark.parametrize(
    ("verb", "scaling"),
    [
        (["status", "enc"], 1),
        (["status", "chat"], 1),
        (["invoke", "enc", "hello"], 0),
        (["invoke", "chat", "hello"], 0),
        (["scale", "enc", "--min", "1", "--max", "3"], 1),
        (["scale", "chat", "--min", "1", "--max", "2"], 1),
        (["scale", "enc", "--max", "3"], 1),  # one bound: the other is the registered target's, read once too
        (["scale", "chat", "--max", "2"], 1),
        (["openai", "chat"], 0),
        (["bench", "enc", "--data", "DATA", "--duration", "1", "--rate-type", "synchronous"], 0),
        (["bench", "enc", "--in-account", "--data", "DATA", "--duration", "1"], 0),
        (["evaluate", "DATA", "--endpoint", "enc", "--task", "text-classification"], 0),
        (["delete", "enc", "--yes"], 1),
    ],
)
def test_each_verb_reads_the_endpoint_once(endpoints, counted, verb, scaling):
    args = [str(endpoints) if a == "DATA" else a for a in verb]
    counted.clear()
    code, out, err = run_cli(*args)
    reads = _reads(counted, "DeleteEndpoint" if verb[0] == "delete" else None)
    assert reads.get("DescribeEndpoint") == 1, (verb, reads, counted[:20], err[-400:])
    assert reads.get("DescribeScalableTargets", 0) == scaling, (verb, reads)
    assert reads.get("ListInferenceComponents", 0) <= 1 and reads.get("ListTags", 0) <= 1, (verb, reads)
    if verb[0] == "status":
        assert code == 0 and json.loads(run_cli(*verb, "--json")[1])["summary"]["name"] == verb[1]


def test_one_bound_keeps_the_endpoints_other_and_a_range_that_cannot_hold_is_refused(endpoints, session):
    """`smneuron scale NAME --max 6`: the floor the endpoint's registered target holds stays (RegisterScalableTarget
    takes one bound alone for a registered target), for an encoder's instances and text generation's copies alike; it
    was a usage error that asked for --min too."""
    aas = session.client("application-autoscaling")

    def held(resource: str) -> tuple[int, int]:
        (t,) = [t for t in aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"]
                if t["ResourceId"] == resource]  # fmt: skip
        return t["MinCapacity"], t["MaxCapacity"]

    enc = "endpoint/enc/variant/AllTraffic"
    assert held(enc) == (1, 2)
    code, out, err = run_cli("scale", "enc", "--max", "6")
    assert code == 0 and held(enc) == (1, 6), err
    assert "autoscaling 1-6 instances (the endpoint's floor 1 kept)" in " ".join(out.split())
    code, out, err = run_cli("scale", "enc", "--min", "3")
    assert code == 0 and held(enc) == (3, 6), err
    code, _, err = run_cli("scale", "enc", "--max", "2")  # below the floor kept
    assert code == 2 and "--max 2 does not fit the endpoint's registered range 3-6" in " ".join(
        err.split()
    ), err
    assert held(enc) == (3, 6)
    code, _, err = run_cli("scale", "enc")
    assert code == 2 and "Give the range to scale in: --min, --max or both" in err
    code, out, err = run_cli("scale", "chat", "--min", "1", "--max", "2")
    assert code == 0, err
    code, out, err = run_cli("scale", "chat", "--max", "3")
    assert code == 0 and held("inference-component/chat-ic") == (1, 3), err
