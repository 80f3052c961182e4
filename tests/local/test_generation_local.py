"""Text generation in the embedded SageMaker, through the CLI as a user runs it: compile -> deploy as an
inference component -> invoke --stream -> bench -> scale copies -> delete -> nothing left; a copy that
cannot start fails its deploy with the container's reason."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import boto3
import pytest
from conftest import llm_copies, local_kw, nothing_is_left, until

pytestmark = pytest.mark.e2e  # servers, subprocesses or the embedded service: not in the fast loop


def _wait_copies(cli, sm, name: str, want: int) -> dict:
    """``status``'s view of the component once ``want`` copies serve (waited for with boto3: a CLI call per poll
    costs half a second of imports)."""

    def serving() -> bool:
        (found,) = sm.list_inference_components(EndpointNameEquals=name)["InferenceComponents"]
        comp = sm.describe_inference_component(InferenceComponentName=found["InferenceComponentName"])
        return (
            comp["RuntimeConfig"]["CurrentCopyCount"] == want
            and comp["InferenceComponentStatus"] == "InService"
        )

    until(serving, f"{want} copies in service", 120)
    comp = json.loads(cli("--local", "status", name, "--json").stdout)["components"][0]
    assert comp["CurrentCopyCount"] == want and comp["InferenceComponentStatus"] == "InService", comp
    return comp


def test_llm_deploy_stream_bench_scale_delete_on_the_embedded_sagemaker(smneuron_cli, tiny_llama, tmp_path):
    out = smneuron_cli(
        "compile",
        str(tiny_llama),
        "-o",
        str(tmp_path / "a"),
        "--target",
        "cpu",
        "--batch-size",
        "4",
        "--sequence-length",
        "256",
    )
    assert "task text-generation inferred from config.json architectures: LlamaForCausalLM" in out.stdout
    # with a proxy in the shell (a dead one): the copies' health checks went to it, and no copy came up
    smneuron_cli.env.update(HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9")
    smneuron_cli("local", "up")
    out = smneuron_cli(
        "--local",
        "deploy",
        str(tmp_path / "a"),
        "--instance",
        "ml.c6i.xlarge",
        "--name",
        "chat",
        "--copies",
        "1",
        "--min-copies",
        "1",
        "--max-copies",
        "2",
    )
    assert "created: InService" in out.stdout and "invoke --stream chat" in out.stdout
    shown = smneuron_cli("--local", "status", "chat").stdout  # it said "workers ?": copies are what it has
    assert "1/1 (inference component)" in shown and "workers" not in shown

    # kill -9 of the copy (issue 22 #4): noticed, shown, replaced; its weights go with the component (#3)
    state, url = tmp_path / "state", json.loads(smneuron_cli("local", "status", "--json").stdout)["url"]
    sm = boto3.client("sagemaker", **local_kw(url))
    (component,) = [
        c["InferenceComponentName"] for c in sm.list_inference_components()["InferenceComponents"]
    ]
    (copy,) = llm_copies(state)  # the one copy: a process of its own, forked from the forkserver
    weights = Path(
        os.readlink(f"/proc/{copy}/cwd")
    ).parent  # it runs in its model directory, as a container does
    assert weights.name.startswith("smneuron-llm-") and weights.exists()
    os.kill(copy, signal.SIGKILL)

    def described() -> dict:
        return sm.describe_inference_component(InferenceComponentName=component)

    dead = until(
        lambda: (d := described())["RuntimeConfig"]["CurrentCopyCount"] == 0 and d, "the dead copy", 30
    )
    assert "exited (code -9)" in dead["FailureReason"] and "being replaced" in dead["FailureReason"]
    until(lambda: described()["RuntimeConfig"]["CurrentCopyCount"] == 1, "a replacement copy")
    assert until(lambda: llm_copies(state), "the replacement copy's process") != [copy]
    assert "FailureReason" not in described()  # whole again

    # a copy killed mid-answer (issue 47 #1): boto3 raises the ModelStreamError SageMaker sends, never a short success
    from botocore.exceptions import EventStreamError

    runtime = boto3.client("sagemaker-runtime", **local_kw(url))
    body = json.dumps({"prompt": "once upon a time", "max_tokens": 200, "ignore_eos": True, "stream": True})
    answer = runtime.invoke_endpoint_with_response_stream(
        EndpointName="chat", InferenceComponentName=component, Body=body, ContentType="application/json"
    )
    events = iter(answer["Body"])
    assert "PayloadPart" in next(events)  # the answer has begun
    (copy,) = llm_copies(state)
    os.kill(copy, signal.SIGKILL)
    with pytest.raises(EventStreamError) as broken:
        for _ in events:
            pass
    error = broken.value.response["Error"]
    assert error["Code"] == "ModelStreamError" and "ended before its final event" in error["Message"], error
    until(lambda: described()["RuntimeConfig"]["CurrentCopyCount"] == 0, "the dead copy noticed", 30)
    until(lambda: described()["RuntimeConfig"]["CurrentCopyCount"] == 1, "a replacement copy")

    streamed = json.loads(
        smneuron_cli(
            "--local",
            "invoke",
            "--stream",
            "chat",
            "where is paris",
            "--max-tokens",
            "12",
            "--seed",
            "0",
            "--json",
        ).stdout
    )
    assert streamed["pieces"] >= 1 and streamed["ttft_s"] <= streamed["total_s"]
    # the stream carries the whole answer: the same seed without streaming answers the same text
    whole = json.loads(smneuron_cli("--local", "invoke", "chat", "where is paris", "--max-tokens", "12", "--seed", "0",
                                    "--json").stdout)  # fmt: skip
    assert streamed["text"] == whole["choices"][0]["message"]["content"] and streamed["text"].strip()
    answer = json.loads(
        smneuron_cli("--local", "invoke", "chat", "the movie", "--prompt", "--max-tokens", "5").stdout
    )
    assert answer["object"] == "text_completion" and answer["usage"]["completion_tokens"] <= 5
    assert answer["model"] == "/opt/ml/model"  # what the vLLM container calls a model shipped as model data
    # plain texts: the endpoint says it generates, so they go as a chat message (they went as {"inputs"}: a 400)
    chat = json.loads(smneuron_cli("--local", "invoke", "chat", "hello", "there", "--json").stdout)
    assert chat["object"] == "chat.completion" and chat["choices"][0]["message"]["role"] == "assistant", chat
    # flags a text-generation request does not carry were taken and sent nowhere (a fuzz of 2026-11-28): refused
    for flags in (["--async"], ["--wait", "5"], ["--accept", "text/plain"], ["--content-type", "text/csv"]):
        refused = smneuron_cli("--local", "invoke", "chat", "hello", *flags, check=False)
        assert refused.returncode == 2 and "not for a text-generation request" in refused.stderr, (
            refused.stderr
        )
    _openai_path(smneuron_cli, url, state, described, tmp_path / "a", tiny_llama)

    bench = json.loads(
        smneuron_cli(
            "--local",
            "bench",
            "chat",
            "--prompt-tokens",
            "16",
            "--output-tokens",
            "8",
            "--tokenizer",
            str(tmp_path / "a"),
            "--rate-type",
            "concurrent",
            "--concurrencies",
            "1,2",
            "--duration",
            "1",
            "--json",
        ).stdout
    )
    assert bench["kind"] == "text-generation" and len(bench["runs"]) == 2
    run = bench["runs"][1]
    assert run["successful"] > 0 and run["errored"] == 0
    assert (
        run["output_tokens"]["min"] == run["output_tokens"]["max"] == 8
    )  # ignore_eos: the lengths asked for
    assert run["prompt_tokens"]["min"] == 16 and run["ttft_ms"]["count"] == run["successful"]
    # where the load landed is read from the endpoint (it recorded copies and tp as unknown, so `recommend
    # --rate` sized fleets wrong): 1 copy, tp 1, 2 copies fit on ml.c6i.xlarge's 4 vCPUs
    served = ("instance_type", "instance_count", "copies", "copies_per_instance", "tensor_parallel_size")
    assert [bench[k] for k in served[:1] + served[2:]] == ["ml.c6i.xlarge", 1, 2, 1]
    assert bench["serving_source"] == dict.fromkeys(served, "endpoint")
    given = json.loads(
        smneuron_cli(
            "--local",
            "bench",
            "chat",
            "--prompt-tokens",
            "8",
            "--output-tokens",
            "4",
            "--tokenizer",
            str(tmp_path / "a"),
            "--rate-type",
            "synchronous",
            "--duration",
            "1",
            "--copies",
            "2",
            "--json",
        ).stdout
    )
    assert (
        given["copies"] == 2 and given["serving_source"]["copies"] == "given"
    )  # a flag overrides, and says so
    assert given["serving_source"]["tensor_parallel_size"] == "endpoint"
    refused = smneuron_cli(
        "--local", "bench", "chat", "--mean-tokens", "30", "--openai", "--processes", "2", check=False
    )
    assert refused.returncode == 1 and "This is a text generation endpoint" in refused.stderr
    assert (
        "--mean-tokens (" in refused.stderr
        and "--openai (" in refused.stderr
        and "--processes (" in refused.stderr
    )

    # --in-account: the profile as a SageMaker AI benchmark job (the embedded one runs smneuron's bench as the job,
    # against the component, and writes the documented metrics under a clearly named prefix), and the same profile
    # from here; the table says who measured what, and the workload config does not outlive the job
    both = json.loads(
        smneuron_cli(
            "--local", "bench", "chat", "--in-account", "--concurrency", "2", "--max-requests", "8",
            "--prompt-tokens", "8", "--output-tokens", "4", "--tokenizer", str(tiny_llama), "--json",
        ).stdout
    )  # fmt: skip
    job = both["benchmark_job"]
    assert job["status"] == "Completed" and job["found_in"].endswith(
        f"/{job['job']}/smneuron-embedded-sagemaker/metrics.json"
    )
    assert "not AIPerf" in job["measured_by"]
    spec = job["workload_spec"]
    assert spec["benchmark"] == {"type": "aiperf"} and spec["parameters"]["concurrency"] == 2
    assert (spec["parameters"]["request_count"], spec["parameters"]["output_tokens_mean"]) == (8, 4)
    assert both["local"]["runs"][0]["successful"] == 8  # the same 8 requests from here
    assert [row[0] for row in both["comparison"]][:3] == ["requests/s", "output tokens/s", "TTFT p50 ms"]
    assert all(row[1] != "-" and row[2] != "-" for row in both["comparison"]), both["comparison"]
    assert sm.list_ai_workload_configs()["AIWorkloadConfigs"] == []
    listed = sm.list_ai_benchmark_jobs()["AIBenchmarkJobs"]
    assert [(j["AIBenchmarkJobName"], j["AIBenchmarkJobStatus"]) for j in listed] == [
        (job["job"], "Completed")
    ]
    target = sm.describe_ai_benchmark_job(AIBenchmarkJobName=job["job"])["BenchmarkTarget"]
    assert target == {"Endpoint": {"Identifier": "chat", "InferenceComponents": [{"Identifier": "chat-ic"}]}}
    refused = smneuron_cli("--local", "bench", "--url", "http://127.0.0.1:9", "--in-account", check=False)
    assert refused.returncode == 2 and "give its name, not --url" in " ".join(refused.stderr.split())

    # what only instances have is refused for copies (it was dropped: the copies scaled, the schedule never came)
    refused = smneuron_cli("--local", "scale", "chat", "--min", "1", "--max", "2", "--metric",
                           "concurrent_requests_per_model", "--schedule", "cron(0 8 * * ? *)=1-2", check=False)  # fmt: skip
    said = " ".join(refused.stderr.split())
    assert refused.returncode == 1 and "Endpoint chat serves text generation" in said, said
    assert "--metric concurrent_requests_per_model (an instance metric) and --schedule (scheduled" in said
    # named at its default value, it was taken and dropped the same way (a fuzz of 2026-11-28)
    refused = smneuron_cli("--local", "scale", "chat", "--min", "1", "--max", "2", "--metric",
                           "invocations_per_instance", check=False)  # fmt: skip
    assert refused.returncode == 1 and "--metric invocations_per_instance (an instance metric)" in " ".join(
        refused.stderr.split()
    )
    scaled = smneuron_cli("--local", "scale", "chat", "--min", "2", "--max", "2").stdout
    assert "autoscaling 2-2 copies" in scaled  # it sets copies, and says so (it said "instances")
    comp = _wait_copies(smneuron_cli, sm, "chat", 2)  # a second copy (a second stand-in server) runs
    assert comp["copy_autoscaling"] == [] and comp["CopyCount"] == 2  # min == max: pinned, no autoscaling

    removed = json.loads(smneuron_cli("--local", "delete", "chat", "--yes", "--json").stdout)["removed"]
    assert any(r.startswith("inference component") for r in removed)
    until(lambda: not weights.exists(), "the copies' weights to be removed", 30)
    assert json.loads(smneuron_cli("--local", "list", "--json").stdout) == []
    probe = """
import boto3, json
kw = json.loads(__import__("os").environ["KW"])
sm, aas = boto3.client("sagemaker", **kw), boto3.client("application-autoscaling", **kw)
print(json.dumps([len(sm.list_inference_components()["InferenceComponents"]), len(sm.list_endpoints()["Endpoints"]),
    len(sm.list_endpoint_configs()["EndpointConfigs"]), len(sm.list_models()["Models"]),
    len(aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"])]))
"""
    url = json.loads(smneuron_cli("local", "status", "--json").stdout)["url"]
    left = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "KW": json.dumps(local_kw(url))},
        capture_output=True,
        text=True,
    )
    assert json.loads(left.stdout) == [0, 0, 0, 0, 0], left.stderr[-800:]

    # a copy that cannot start fails the deploy with the container's reason, and nothing is left
    m = json.loads((tmp_path / "a" / "smneuron.json").read_text())
    m["compiler"]["target"] = "inf2"  # as if exported for inf2: the stand-in (a CPU host) cannot run it
    (tmp_path / "a" / "smneuron.json").write_text(json.dumps(m))
    out = smneuron_cli(
        "--local",
        "deploy",
        str(tmp_path / "a"),
        "--instance",
        "ml.inf2.48xlarge",
        "--name",
        "neuron-llm",
        check=False,
    )
    assert out.returncode == 1, out.stdout
    assert "needs NeuronCores" in out.stderr and "Unexpected" not in out.stderr
    assert (
        json.loads(smneuron_cli("--local", "list", "--json").stdout) == []
    )  # the failed deploy removed what it created
    smneuron_cli("local", "down")
    nothing_is_left(state)  # the killed copy's replacement included (ps)


def test_streaming_from_a_missing_endpoint_is_a_clear_error(smneuron_cli):
    out = smneuron_cli("--local", "invoke", "--stream", "nope", "hello", check=False)
    assert out.returncode == 1 and "Unexpected" not in out.stderr


def _openai_path(smneuron_cli, url: str, state, described, artifact, model) -> None:
    """Issue 48: SageMaker's /openai/v1 on the embedded service, held to the real openai client (sync, streamed, async)
    with smneuron's token and with SDK v3's own ``generate_token``; every refused token refused as the client expects;
    a broken stream reported in-band."""
    import asyncio
    import datetime as dt

    import httpx
    import openai
    from botocore.credentials import Credentials
    from sagemaker.core.token_generator import generate_token

    from smneuron.endpoints.openai_compat import mint_token

    access = json.loads(smneuron_cli("--local", "openai", "chat", "--expires", "30m", "--json").stdout)
    assert access["base_url"] == f"{url}/endpoints/chat/inference-components/chat-ic/openai/v1"
    assert access["model"] == "/opt/ml/model" and access["token"].startswith("sagemaker-api-key-")
    messages = [{"role": "user", "content": "where is paris"}]
    # a random model may sample its end-of-sequence token first and answer nothing: vLLM's ignore_eos (what GuideLLM
    # sends too) makes every answer as long as asked, so each one below has text to check
    whole = {"ignore_eos": True}
    # the lines it prints for a shell, as the README evals them: the client below uses what the shell got
    shown = smneuron_cli("--local", "openai", "chat", "--expires", "30m").stdout
    exports = "\n".join(line for line in shown.splitlines() if line.startswith("export "))
    shell = subprocess.run(
        ["bash", "-c", f"{exports}\nenv -0"], env={}, capture_output=True, text=True, check=True
    )
    got = dict(item.split("=", 1) for item in shell.stdout.split("\0") if item.startswith("OPENAI_"))
    assert got["OPENAI_BASE_URL"] == access["base_url"] and got["OPENAI_API_KEY"].startswith(
        "sagemaker-api-key-"
    )
    client = openai.OpenAI(base_url=got["OPENAI_BASE_URL"], api_key=got["OPENAI_API_KEY"], max_retries=0)
    reply = client.chat.completions.create(
        model=access["model"], messages=messages, max_tokens=5, extra_body=whole
    )
    assert (
        reply.object == "chat.completion"
        and reply.usage.completion_tokens == 5
        and reply.choices[0].message.content
    )
    pieces = [c.choices[0].delta.content for c in client.chat.completions.create(
        model="", messages=messages, max_tokens=6, stream=True, extra_body=whole)
        if c.choices and c.choices[0].delta.content]  # fmt: skip
    assert pieces  # streamed, an empty model passed on as sent

    async def twice() -> list[str]:
        async with openai.AsyncOpenAI(
            base_url=access["base_url"], api_key=access["token"], max_retries=0
        ) as aclient:
            done = await asyncio.gather(*[aclient.chat.completions.create(model="", messages=messages, max_tokens=3,
                                                                          extra_body=whole)
                                          for _ in range(2)])  # fmt: skip
        return [d.choices[0].message.content for d in done]

    assert all(asyncio.run(twice()))
    keys = local_kw(url)
    own = Credentials(keys["aws_access_key_id"], keys["aws_secret_access_key"])

    class Provider:  # SDK v3's generate_token takes a botocore credential provider
        def load(self):
            return own

    sdk_token = generate_token(
        region="us-east-1", aws_credentials_provider=Provider(), expiry=dt.timedelta(minutes=5)
    )
    sdk = openai.OpenAI(base_url=access["base_url"], api_key=sdk_token, max_retries=0)
    # answered (2 sampled tokens of a random model may decode to nothing, so the tokens are counted, not the text)
    assert (
        sdk.chat.completions.create(
            model="", messages=messages, max_tokens=2, extra_body=whole
        ).usage.completion_tokens
        == 2
    )
    # as curl sends it
    # (vLLM's ignore_eos, as above: the random model's end-of-sequence token comes first about one time in 100)
    raw = httpx.post(access["base_url"] + "/chat/completions", headers={"Authorization": f"Bearer {sdk_token}"},
                     json={"model": "", "messages": messages, "max_tokens": 2, "ignore_eos": True})  # fmt: skip
    assert raw.status_code == 200 and raw.json()["object"] == "chat.completion"
    assert raw.json()["usage"]["completion_tokens"] == 2 and isinstance(
        raw.json()["choices"][0]["message"]["content"], str
    )

    refused = {
        "a foreign key": (mint_token(Credentials("AKIAFOREIGNKEY000000", "x" * 40), "us-east-1", dt.timedelta(hours=1)), openai.AuthenticationError, "not one the embedded AWS issued"),
        "empty": ("", openai.AuthenticationError, "Authorization: Bearer"),
        "cut short": (sdk_token[:-12], openai.AuthenticationError, "not a presigned CallWithBearerToken URL"),
        "not SageMaker's": ("sk-" + "a" * 40, openai.AuthenticationError, "not a SageMaker token"),
        "another region": (mint_token(own, "us-west-2", dt.timedelta(hours=1)), openai.PermissionDeniedError, "region us-west-2"),
    }  # fmt: skip
    for why, (token, error, words) in refused.items():
        with pytest.raises(error, match=words), _saying(why):
            openai.OpenAI(base_url=access["base_url"], api_key=token or "x", max_retries=0,
                          default_headers={"Authorization": "Bearer"} if not token else None,
                          ).chat.completions.create(model="", messages=messages, max_tokens=2)  # fmt: skip
    # bench through the same path: it says which, and counts output tokens as the SigV4 path does (ignore_eos)
    via = json.loads(smneuron_cli("--local", "bench", "chat", "--via", "openai", "--prompt-tokens", "16",
                                  "--output-tokens", "8", "--tokenizer", str(artifact), "--rate-type", "synchronous",
                                  "--duration", "1", "--json").stdout)  # fmt: skip
    (run,) = via["runs"]
    assert via["path"] == "/openai/v1/chat/completions" and run["successful"] > 0 and run["errored"] == 0
    assert run["output_tokens"]["min"] == run["output_tokens"]["max"] == 8
    # evaluate through the same path: chat answers against the model's CPU reference under its chat template
    data = artifact.parent / "prompts.jsonl"
    data.write_text('{"inputs": "the weather in paris is"}\n{"inputs": "john and mary went to"}\n')
    scored = json.loads(smneuron_cli("--local", "evaluate", str(data), "--model", str(model), "--endpoint", "chat",
                                     "--via", "openai", "--json").stdout)  # fmt: skip
    assert scored["passed"] and scored["metrics"]["logit_match"] == 1.0, scored["summary"]
    assert (
        scored["metrics"]["perplexity_rel_diff"] is None
        and "Chat Completions (/openai/v1)" in scored["summary"]
    )
    for via in (
        "invoke",
        "openai",
    ):  # a component named is the one scored, on either path; a wrong one is refused first
        wrong = smneuron_cli("--local", "evaluate", str(data), "--model", str(model), "--endpoint", "chat",
                             "--component", "nope", "--via", via, check=False)  # fmt: skip
        assert wrong.returncode == 1 and "has no inference component 'nope'" in wrong.stderr, wrong.stderr
        assert "Its components: chat-ic." in wrong.stderr
    # an expired token (tests/endpoints/test_openai_compat.py, under a controlled clock) and a stream broken mid-answer
    # (tests/local/test_openai_route.py, the same relay as the SigV4 stream's kill above) are held where no wait is needed


class _saying:
    """Which case failed, in the assertion's message."""

    def __init__(self, why: str) -> None:
        self.why = why

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, value, tb) -> bool:
        if kind is not None and issubclass(kind, AssertionError):
            raise AssertionError(f"{self.why}: {value}") from value
        return False
