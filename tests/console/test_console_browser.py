"""`smneuron console` in a real browser (issue 65): headless Chromium drives the page against the embedded SageMaker
as a person would: the token door, the endpoint list against `smneuron list --json`, an invoke against `smneuron
invoke`, scaling, logs that follow, a chart with data, a delete with its confirmation; screenshots of each page go to
the test's folder (and to SMNEURON_SCREENSHOTS when set)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from browser import Browser

pytestmark = pytest.mark.e2e


def _console(env: dict, port_file: Path) -> tuple[subprocess.Popen, str]:
    """`smneuron --local console` as a user starts it; its URL as it printed it."""
    out = port_file.open("w")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "smneuron"), "--local", "console"], env=env,
                            stdout=out, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    deadline = 60
    import time

    for _ in range(deadline * 10):
        text = port_file.read_text()
        url = next((w for w in text.split() if w.startswith("http://127.0.0.1:") and "token=" in w), None)
        if url:
            return proc, url
        assert proc.poll() is None, text
        time.sleep(0.1)
    raise AssertionError(port_file.read_text())


def test_the_console_drives_the_embedded_sagemaker_in_a_real_browser(smneuron_cli, tiny_classifier, tiny_llama,
                                                                      tmp_path):  # fmt: skip
    from smneuron.compilation.encoder import compile_model
    from smneuron.compilation.entry import compile_model as compile_any

    smneuron_cli("local", "up", "--metric-period", "0.5")
    art = compile_model(
        tiny_classifier, tmp_path / "art", target="cpu", task="text-classification", buckets="16"
    )
    smneuron_cli("--local", "deploy", str(art.out_dir), "--instance", "ml.c6i.xlarge", "--name", "enc")
    llm = compile_any(tiny_llama, tmp_path / "llm", target="cpu", batch_size=4, sequence_length=256).out_dir
    smneuron_cli(
        "--local", "deploy", str(llm), "--instance", "ml.c6i.xlarge", "--name", "chat", "--copies", "1"
    )
    proc, url = _console(smneuron_cli.env, tmp_path / "console.out")
    base = url.split("/?", 1)[0]
    shots = tmp_path / "screenshots"
    try:
        with Browser(tmp_path / "chrome") as b:
            # the door: no token, a wrong token
            b.open(base + "/")
            assert "Open the URL `smneuron console` printed" in b.js("document.body.innerText")
            b.screenshot(shots / "no-token.png")
            b.open(base + "/?token=wrong")
            assert "The token is wrong or was spent" in b.js("document.body.innerText")
            # the printed URL: the list, as `smneuron list --json` has it
            b.open(url, "document.body.dataset.ready === '#/'")
            assert b.js("location.href") == base + "/"  # the token left the address bar
            listed = [r["name"] for r in json.loads(smneuron_cli("--local", "list", "--json").stdout)]
            shown = b.js(
                "[...document.querySelectorAll('#endpoints tr td:first-child')].map(t => t.innerText)"
            )
            assert shown == listed and sorted(listed) == ["chat", "enc"]
            b.screenshot(shots / "endpoints.png")
            _doors(b, base)
            _generation_page(b, smneuron_cli, shots)
            _endpoint_page(b, smneuron_cli, shots)
            b.js("location.hash = '#/doctor'")
            b.wait("document.body.dataset.ready === '#/doctor'")
            b.js(f"document.getElementById('artifact').value = {json.dumps(str(art.out_dir))}; "
                 "document.getElementById('check').click()")  # fmt: skip
            assert "can be deployed to ml.c6i.xlarge" in b.wait(
                "document.getElementById('verdict').innerText"
            )
            b.screenshot(shots / "doctor.png")
            for page in ("jobs", "matrix"):
                b.js(f"location.hash = '#/{page}'")
                b.wait(f"document.body.dataset.ready === '#/{page}'")
                b.screenshot(shots / f"{page}.png")
            assert b.js("document.querySelectorAll('#matrix tr').length") > 5
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if os.environ.get("SMNEURON_SCREENSHOTS"):
            shutil.copytree(shots, os.environ["SMNEURON_SCREENSHOTS"], dirs_exist_ok=True)
    print(f"screenshots: {shots}")


def _doors(b: Browser, base: str) -> None:
    """A page of another origin cannot read it; a request with a foreign Origin or Host, or a change without the page's
    CSRF token, is refused even with the session cookie."""
    cookies = {c["name"]: c["value"] for c in b.send("Storage.getCookies")["cookies"]}
    assert "smneuron_console" in cookies
    with httpx.Client(base_url=base, cookies=cookies) as h:
        assert h.get("/api/endpoints").status_code == 200
        assert h.get("/api/endpoints", headers={"Origin": "http://evil.example"}).status_code == 403
        assert h.get("/api/endpoints", headers={"Host": "evil.example"}).status_code == 403
        assert (
            h.post("/api/endpoints/enc/delete", json={"confirm": "enc"}).status_code == 403
        )  # no CSRF token
    assert httpx.get(base + "/api/endpoints").status_code == 401  # no cookie


def _endpoint_page(b: Browser, cli, shots: Path) -> None:  # type: ignore[no-untyped-def]
    b.js("location.hash = '#/endpoint/enc'")
    b.wait("document.body.dataset.ready === '#/endpoint/enc'")
    assert b.js("document.getElementById('status').innerText") == "InService"
    # invoke from the page: the answer `smneuron invoke` gives
    b.js("""document.getElementById('body').value = '{"inputs": "I loved this movie"}';
            document.getElementById('invoke').click()""")
    answer = json.loads(
        b.wait("document.getElementById('latency').innerText && document.getElementById('answer').innerText")
    )
    want = json.loads(cli("--local", "invoke", "enc", "I loved this movie", "--json").stdout)["answer"]
    assert [a["label"] for a in answer] == [w["label"] for w in want]
    assert all(abs(a["score"] - w["score"]) < 1e-6 for a, w in zip(answer, want, strict=True))
    assert b.js("document.getElementById('invoke-cli').innerText").startswith("smneuron --local invoke enc")
    # logs follow: the lines so far, then those of a second instance the page's scaling starts
    b.wait("document.getElementById('logs').innerText.trim().length > 0")
    before = b.js("document.getElementById('logs').innerText.split('\\n').length")
    b.js("document.getElementById('min').value = 2; document.getElementById('max').value = 2; "
         "document.getElementById('scale').click()")  # fmt: skip
    assert "autoscaling 2-2" in b.wait("document.getElementById('scaled').innerText")
    assert (
        b.js("document.getElementById('scale-cli').innerText") == "smneuron --local scale enc --min 2 --max 2"
    )
    b.wait(f"document.getElementById('logs').innerText.split('\\n').length > {before}", timeout=120)
    b.screenshot(shots / "endpoint.png")
    # a chart with data: the invocations counted by the embedded CloudWatch, drawn after a reload
    for _ in range(3):
        cli("--local", "invoke", "enc", "what a great film")
    b.js("document.body.dataset.ready = ''; location.reload()")
    b.wait(
        "document.body.dataset.ready === '#/endpoint/enc' && !!document.querySelector('#charts svg.series')",
        60,
    )
    assert b.js("+document.querySelector('#charts svg.series').dataset.points") > 0
    titles = b.js("[...document.querySelectorAll('#charts .chart b')].map(t => t.innerText)")
    assert "Instances" in titles and "ModelLatency maximum (microseconds)" in titles
    b.screenshot(shots / "metrics.png")
    # delete: the name must be typed; then it is gone for the CLI too
    b.js("document.getElementById('confirm').value = 'wrong'; document.getElementById('delete').click()")
    assert "Type the endpoint's name" in b.wait("document.getElementById('deleted').innerText")
    b.js("document.getElementById('deleted').innerText = ''; document.getElementById('confirm').value = 'enc'; "
         "document.getElementById('delete').click()")  # fmt: skip
    assert b.wait("document.getElementById('deleted').innerText").startswith("deleted:")
    assert [r["name"] for r in json.loads(cli("--local", "list", "--json").stdout)] == ["chat"]


def _generation_page(b: Browser, cli, shots: Path) -> None:  # type: ignore[no-untyped-def]
    """A text-generation endpoint: its component and a streamed answer, the one `smneuron invoke --stream` gives."""
    b.js("location.hash = '#/endpoint/chat'")
    b.wait("document.body.dataset.ready === '#/endpoint/chat'")
    assert b.js("document.querySelectorAll('#components tr').length") == 2  # the header and the one component
    b.js("document.getElementById('prompt').value = 'where is paris'; "
         "document.getElementById('max-tokens').value = 12; document.getElementById('generate').click()")  # fmt: skip
    said = b.wait("document.getElementById('latency').innerText")
    assert said.startswith("first token") and "ms" in said, said
    streamed = json.loads(cli("--local", "invoke", "--stream", "chat", "where is paris", "--max-tokens", "12", "--seed",
                              "0", "--json").stdout)  # fmt: skip
    assert (
        b.js("document.getElementById('answer').innerText") == streamed["text"] and streamed["text"].strip()
    )
    command = b.js("document.getElementById('invoke-cli').innerText")
    assert command == "smneuron --local invoke --stream chat 'where is paris' --max-tokens 12 --seed 0"
    b.screenshot(shots / "generation.png")
