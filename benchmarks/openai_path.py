"""SageMaker's /openai/v1 against InvokeEndpoint on the embedded SageMaker, same component and same run.

A tiny random Llama (the test model) compiled for cpu and deployed on `smneuron local up` as one inference-component
copy (ml.c6i.xlarge, the stand-in vLLM server). Each path sends the same chat request (4 output tokens, ignore_eos):

- direct: POST /v1/chat/completions to the copy itself (with the service's per-start key);
- InvokeEndpoint, raw signed: a SigV4-signed POST of the same body to /endpoints/NAME/invocations with the
  component header, on a kept-alive connection (signed before the clock starts, as the token is minted before);
- /openai/v1, bearer: POST .../inference-components/IC/openai/v1/chat/completions with a bearer token, on a kept-alive
  connection (the token minted once, as a client reuses it);
- /openai/v1, openai client: the `openai` package's client (what a user runs).

p50 / p99 at concurrency 1, the paths taken in turns request by request. Goal (issue 48): /openai/v1 adds no more than 10% to InvokeEndpoint's median latency.

python benchmarks/openai_path.py [--requests 200]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import httpx
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from invoke_overhead import latencies
from local_service import down, environment, marked, tiny_llm_endpoint

from smneuron.endpoints.openai_compat import mint_token

BODY = json.dumps(
    {
        "model": "",
        "messages": [{"role": "user", "content": "where is paris"}],
        "max_tokens": 4,
        "ignore_eos": True,
    }
).encode()


def copy_of(state: Path) -> tuple[str, str]:
    """The stand-in copy's URL and the service's key (a marked process listening on a port of its own)."""
    import subprocess

    key = ""
    for pid in marked(state):
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        key = next(
            (v.split(b"=", 1)[1].decode() for v in environ if v.startswith(b"SMNEURON_SERVER_KEY=")), key
        )
    lines = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout.splitlines()
    for line in lines:
        port = line.split()[3].rsplit(":", 1)[1]
        if any(f"pid={pid}," in line for pid in marked(state)):
            try:
                r = httpx.get(
                    f"http://127.0.0.1:{port}/v1/models",
                    headers={"Authorization": f"Bearer {key}"},
                    timeout=2,
                )
            except httpx.HTTPError:
                continue
            if r.status_code == 200:
                return f"http://127.0.0.1:{port}", key
    raise SystemExit("could not find the copy's port")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="smneuron-openai-path-"))
    state = work / "state"
    env = environment(state)
    try:
        up = tiny_llm_endpoint(env, work)
        keys = json.loads((state / "credentials.json").read_text())
        creds = Credentials(keys["AWS_ACCESS_KEY_ID"], keys["AWS_SECRET_ACCESS_KEY"])
        direct_url, key = copy_of(state)
        token = mint_token(creds, "us-east-1", dt.timedelta(hours=1))
        base = f"{up['url']}/endpoints/chat/inference-components/chat-ic/openai/v1"

        def direct() -> Any:
            http = httpx.Client(
                timeout=60, headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
            )
            return lambda: http.post(direct_url + "/v1/chat/completions", content=BODY).raise_for_status()

        def signed() -> Any:
            http, url = httpx.Client(timeout=60), f"{up['url']}/endpoints/chat/invocations"

            def prepare() -> Any:  # signed before the clock starts, as the bearer token is minted before
                headers = {
                    "Content-Type": "application/json",
                    "X-Amzn-SageMaker-Inference-Component": "chat-ic",
                }
                request = AWSRequest(method="POST", url=url, data=BODY, headers=headers)
                SigV4Auth(creds, "sagemaker", "us-east-1").add_auth(request)
                signed_headers = dict(request.headers)
                return lambda: http.post(url, content=BODY, headers=signed_headers).raise_for_status()

            def call() -> None:
                prepare()()

            call.prepare = prepare  # type: ignore[attr-defined]  # invoke_overhead.latencies times the send alone
            return call

        def bearer() -> Any:
            http = httpx.Client(
                timeout=60, headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
            )
            return lambda: http.post(base + "/chat/completions", content=BODY).raise_for_status()

        def client() -> Any:
            import openai

            c = openai.OpenAI(base_url=base, api_key=token, max_retries=0)
            messages = [{"role": "user", "content": "where is paris"}]
            return lambda: c.chat.completions.create(
                model="", messages=messages, max_tokens=4, extra_body={"ignore_eos": True}
            )

        paths = {
            "direct (the copy)": direct,
            "InvokeEndpoint, raw signed": signed,
            "/openai/v1, bearer token": bearer,
            "/openai/v1, openai client": client,
        }
        measured = latencies(
            [make() for make in paths.values()], args.requests
        )  # in turns, request by request
        rows = [(name, p50, p99) for name, (p50, p99) in zip(paths, measured, strict=True)]
    finally:
        down(env)
        shutil.rmtree(work, ignore_errors=True)
    invoke = rows[1][1]
    print(f"{'path':30} {'p50 ms':>8} {'p99 ms':>8} {'x InvokeEndpoint p50':>21}")
    for name, p50, p99 in rows:
        print(f"{name:30} {p50:8.2f} {p99:8.2f} {p50 / invoke:21.2f}")
    ratio = rows[2][1] / invoke
    print(
        f"\n/openai/v1 (bearer) / InvokeEndpoint p50 = {ratio:.2f}x (goal <= 1.10x): {'met' if ratio <= 1.10 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
