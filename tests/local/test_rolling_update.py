"""A text-generation redeploy rolls its copies (issue 36): batch by batch, the old copies serving until the new ones
answer, rolled back by the endpoint's alarm. Through the CLI on the embedded SageMaker, with two tiny models whose
greedy answers differ."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import boto3
import pytest
from conftest import local_kw, only_the_service_is_left, until

from smneuron.local.tiny_model import build_tiny_llama

pytestmark = pytest.mark.e2e

# greedy; the generated tokens' log-probabilities tell the two random models apart (their text may be special tokens)
PROMPT = {"prompt": "the cat", "max_tokens": 4, "temperature": 0.0, "ignore_eos": True, "logprobs": 1}


def _answer(runtime, component: str) -> str:
    body = runtime.invoke_endpoint(
        EndpointName="chat", InferenceComponentName=component, ContentType="application/json",
        Body=json.dumps(PROMPT),
    )["Body"].read()  # fmt: skip
    return " ".join(f"{x:.4f}" for x in json.loads(body)["choices"][0]["logprobs"]["token_logprobs"])


def _deploy(tmp_path, artifact, *extra: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMNEURON_"))}
    env.update(
        SMNEURON_STATE_DIR=str(tmp_path / "state"), SMNEURON_CACHE_DIR=os.environ["SMNEURON_CACHE_DIR"]
    )
    return subprocess.Popen(
        [sys.executable, "-m", "smneuron.cli.main", "--local", "deploy", str(artifact), "--instance",
         "ml.c6i.2xlarge", "--name", "chat", "--copies", "4", "--rolling-batch", "1", "--rolling-wait", "2", *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_a_redeploy_rolls_copies_and_an_alarm_rolls_them_back(smneuron_cli, tmp_path):
    import smneuron

    for name, seed in (("a", 0), ("b", 1)):
        smneuron.compile(build_tiny_llama(tmp_path / f"model-{name}", seed=seed), tmp_path / name, target="cpu",
                         task="text-generation", batch_size=2, sequence_length=128)  # fmt: skip
    smneuron_cli("local", "up")
    status = json.loads(smneuron_cli("local", "status", "--json").stdout)
    kw = local_kw(status["url"])
    sm, runtime, cw = (boto3.client(s, **kw) for s in ("sagemaker", "sagemaker-runtime", "cloudwatch"))

    first = _deploy(tmp_path, tmp_path / "a")
    assert first.wait(timeout=300) == 0, first.stderr.read()[-2000:]
    (component,) = [
        c["InferenceComponentName"] for c in sm.list_inference_components()["InferenceComponents"]
    ]
    old = _answer(runtime, component)
    assert len(old.split()) == 4, old  # four generated tokens
    assert {_answer(runtime, component) for _ in range(8)} == {old}  # four copies of one model

    plan = json.loads(smneuron_cli("--local", "deploy", str(tmp_path / "b"), "--instance", "ml.c6i.2xlarge", "--name",
                      "chat", "--copies", "4", "--rolling-batch", "1", "--rolling-wait", "2", "--dry-run", "--json").stdout)  # fmt: skip
    assert plan["rolling_update"] == {"batches": [1, 1, 1, 1], "wait_s": 2, "alarms": ["smneuron-chat-5xx"]}

    rolling = _deploy(tmp_path, tmp_path / "b")
    seen: list[str] = []
    while (
        rolling.poll() is None
    ):  # the old copies serve until the new ones answer: both models answer meanwhile
        seen.append(_answer(runtime, component))
        time.sleep(
            0.1
        )  # a request every tenth of a second is enough to see both; a tight loop slows the roll
    out, err = rolling.communicate()
    assert rolling.returncode == 0, err[-2000:]
    new = _answer(runtime, component)
    assert new != old and {old, new} <= set(seen), (old, new, set(seen))
    assert {_answer(runtime, component) for _ in range(8)} == {new}  # only the new model after
    described = sm.describe_inference_component(InferenceComponentName=component)
    policy = described["LastDeploymentConfig"]["RollingUpdatePolicy"]
    assert policy["MaximumBatchSize"] == {"Type": "COPY_COUNT", "Value": 1}
    assert described["LastDeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"] == [
        {"AlarmName": "smneuron-chat-5xx"}
    ]

    back = _deploy(tmp_path, tmp_path / "a")  # the old weights again; the alarm fires after the first batch
    until(lambda: _answer(runtime, component) == old, "the first new copy to answer", 120)
    cw.set_alarm_state(AlarmName="smneuron-chat-5xx", StateValue="ALARM", StateReason="5XX errors (test)")
    out, err = back.communicate(timeout=300)
    err = " ".join(err.split())
    assert (
        back.returncode == 1 and "was rolled back" in err and "alarm smneuron-chat-5xx went into ALARM" in err
    )
    assert {_answer(runtime, component) for _ in range(8)} == {new}  # every copy serves the model before it
    described = sm.describe_inference_component(InferenceComponentName=component)
    assert described["InferenceComponentStatus"] == "InService"
    assert described["RuntimeConfig"]["CurrentCopyCount"] == 4

    cw.set_alarm_state(AlarmName="smneuron-chat-5xx", StateValue="OK", StateReason="test over")
    smneuron_cli("--local", "delete", "chat", "--yes")
    only_the_service_is_left(tmp_path / "state", status["pid"])
