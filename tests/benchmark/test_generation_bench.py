"""Text-generation benchmarking: GuideLLM's metric definitions, exact synthetic prompts, profiles, goodput,
cost, reports (checked in headless Chromium), compare and recommend."""

from __future__ import annotations

import itertools
import json
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest

from smneuron.benchmark.generation_metrics import Slo, Timing, summarize


def test_per_request_metrics_follow_guidellms_definitions():
    # start 0, first token at 0.1, then 9 more tokens 0.02 apart (last at 0.28), end at 0.3
    t = Timing(start=0.0, end=0.3, first_token=0.1, last_token=0.28, prompt_tokens=7, output_tokens=10)
    assert t.ttft == pytest.approx(0.1)
    assert t.itl == pytest.approx(0.02)  # (last - first) / (output tokens - 1)
    assert t.tpot == pytest.approx(0.028)  # (last token - start) / output tokens
    assert t.output_tps == pytest.approx(10 / 0.3)
    assert Timing(0, 1, 0.5, 0.5, 0, 1).itl is None  # one token: no inter-token latency


def test_run_aggregates_over_the_window_with_a_controlled_clock():
    # 4 requests of 1 s each, two at a time, over [0, 2): 2 req/s, 4 x 20 tokens / 2 s = 40 tokens/s
    ts = [Timing(s, s + 1.0, s + 0.2, s + 0.96, 5, 20) for s in (0.0, 0.0, 1.0, 1.0)]
    ts.append(Timing(0.5, 0.6, status="error", error="HTTP 500: boom"))
    ts.append(Timing(1.5, 1.9, 1.6, 1.8, 5, 3, status="incomplete", error="cut off"))
    run = summarize(ts, "concurrent", concurrency=2, slo=Slo(ttft_ms=250, itl_ms=50))
    assert (run.successful, run.errored, run.incomplete) == (4, 1, 1)
    assert run.requests_per_s == pytest.approx(2.0)
    assert run.output_tokens_per_s == pytest.approx(40.0)
    assert run.total_tokens_per_s == pytest.approx((80 + 20) / 2.0)
    assert run.concurrency_mean == pytest.approx(
        (4 * 1.0 + 0.1 + 0.4) / 2.0
    )  # time-weighted: latency sum / window
    assert run.ttft_ms["p50"] == pytest.approx(200.0) and run.itl_ms["mean"] == pytest.approx(40.0)
    assert run.goodput_share == pytest.approx(4 / 6)  # the error and the cut-off request miss the SLOs
    assert run.errors == {"HTTP 500: boom": 1, "cut off": 1}
    warm = summarize(ts, "concurrent", warmup_s=0.9)  # requests starting in the warm-up are not measured
    assert warm.successful == 2


def test_cost_per_million_tokens_from_the_price_share():
    from smneuron.benchmark.generation_metrics import add_cost

    run = summarize([Timing(0, 1, 0.1, 0.9, 5, 100)], "synchronous")
    add_cost(run, 15.58 / 3)  # one copy of three on an ml.inf2.48xlarge
    assert run.cost_per_million_output_tokens_usd == pytest.approx(15.58 / 3 / 3600 / 100 * 1e6)
    assert run.cost_per_million_requests_usd == pytest.approx(15.58 / 3 / 3600 / 1 * 1e6)


def test_sse_is_parsed_whatever_the_network_splits():
    from smneuron.endpoints.streaming import SseBuffer, sse_events
    from smneuron.errors import InvocationError

    stream = b'data: {"choices":[{"text":"a"}]}\n\ndata: {"choices":[{"text":"b"}]}\n\ndata: [DONE]\n\n'
    for cut in range(1, len(stream)):
        assert [e["choices"][0]["text"] for e in sse_events([stream[:cut], stream[cut:]])] == ["a", "b"]
    with pytest.raises(InvocationError, match="too long"):
        SseBuffer().feed(b'data: {"object": "error", "message": "too long", "code": 400}\n')


@pytest.mark.parametrize("which", ["tiny_llama", "minilm_dir"])
def test_synthetic_prompts_have_exactly_the_tokens_asked_for(which, request):
    from smneuron.benchmark.prompts import Lengths, load_tokenizer, synthetic_prompts

    tok = load_tokenizer(request.getfixturevalue(which))
    prompts = synthetic_prompts(tok, Lengths(40, 12, 20, 60), 40, seed=3)
    for text, n in prompts:
        assert len(tok.encode(text, add_special_tokens=False).ids) == n and 20 <= n <= 60
    assert len({n for _, n in prompts}) > 5  # a spread, not one length


def test_requests_ask_for_exact_output_lengths(tiny_llama, tmp_path):
    from smneuron.benchmark.prompts import Lengths, requests_from
    from smneuron.errors import ConfigError

    bodies = [
        json.loads(b)
        for b in requests_from(
            tokenizer_path=tiny_llama, prompt_tokens=Lengths(8), output_tokens=Lengths(32), count=3
        )
    ]
    assert all(b["max_tokens"] == 32 and b["ignore_eos"] and b["stream"] for b in bodies)
    with pytest.raises(ConfigError, match="--prompt-tokens N with --tokenizer"):
        requests_from(tokenizer_path=None, prompt_tokens=None, output_tokens=Lengths(32))
    (tmp_path / "d.jsonl").write_text(
        '"hi"\n{"messages": [{"role": "user", "content": "yo"}], "max_tokens": 5}\n'
    )
    a, b = [
        json.loads(x)
        for x in requests_from(
            tokenizer_path=None, prompt_tokens=None, output_tokens=Lengths(9), dataset=tmp_path / "d.jsonl"
        )
    ]
    assert (a["prompt"], a["max_tokens"], b["max_tokens"]) == ("hi", 9, 5)
    (tmp_path / "bad.jsonl").write_text('{"text": "no prompt"}\n')
    with pytest.raises(ConfigError, match="without prompt or messages"):
        requests_from(
            tokenizer_path=None, prompt_tokens=None, output_tokens=Lengths(9), dataset=tmp_path / "bad.jsonl"
        )


def test_metrics_against_a_server_with_known_timings():
    """TTFT 100 ms, ITL 20 ms, 20 tokens, every 5th request a 500. Lower bounds are exact (the server cannot
    be faster than its script); upper bounds leave room for a loaded 2-core machine."""
    from smneuron.benchmark.generation import run_generation
    from smneuron.benchmark.prompts import completion_body
    from smneuron.local.generation.scripted import Script, ScriptedServer

    bodies = [completion_body("one two three", 20)]
    with ScriptedServer(Script(ttft_ms=100, itl_ms=20, error_every=5)) as url:
        report = run_generation(
            bodies=bodies, url=url, profile="concurrent", concurrencies=[2], duration_s=2.0
        )
    run = report.runs[0]
    n = run.successful + run.errored
    assert run.errored == n // 5 and run.incomplete == 0
    assert run.output_tokens["min"] == run.output_tokens["max"] == 20  # from the usage chunk
    assert 100 <= run.ttft_ms["p50"] < 200
    # the server sends token i at start + TTFT + i x ITL, so a late first token (a loaded machine) shortens
    # the measured first-to-last span: ITL's lower bound carries a margin, the others are exact
    assert 18 <= run.itl_ms["mean"] < 30
    assert 24 <= run.tpot_ms["mean"] < 36  # (100 + 19 x 20) / 20 = 24
    assert 0.48 * 1000 <= run.latency_ms["p50"] < 700
    assert run.concurrency_mean == pytest.approx(2, rel=0.25)


@pytest.mark.e2e
def test_open_loop_profiles_schedule_their_rates():
    from smneuron.benchmark.generation import run_generation
    from smneuron.benchmark.profiles import send_times
    from smneuron.benchmark.prompts import completion_body
    from smneuron.local.generation.scripted import Script, ScriptedServer

    with ScriptedServer(Script(ttft_ms=5, itl_ms=1)) as url:
        report = run_generation(
            bodies=[completion_body("x", 4)], url=url, profile="poisson", rate=20, duration_s=3.0, seed=7
        )
        sweep = run_generation(
            bodies=[completion_body("x", 4)],
            url=url,
            profile="sweep",
            rates=2,
            duration_s=1.0,
            max_concurrency=4,
        )
    # the seeded Poisson schedule decides how many requests a 3 s run sends and when: exactly those, never early
    scheduled = list(itertools.takewhile(lambda t: t < 3.0, send_times(20, poisson=True, seed=7)))
    gaps = [b - a for a, b in itertools.pairwise(scheduled)]
    assert statistics.pstdev(gaps) > 0.4 * statistics.mean(gaps)  # exponential gaps, not a fixed interval
    starts = sorted(t.start for t in report.runs[0].timings)
    assert len(starts) == len(scheduled)
    assert all(
        start >= at for start, at in zip(starts, scheduled, strict=True)
    )  # an open loop is never early
    assert [r.profile for r in sweep.runs] == ["synchronous", "throughput", "constant", "constant"]
    assert sweep.runs[0].requests_per_s < sweep.runs[2].rate < sweep.runs[3].rate


def _report(
    tp: int, copies: int, per_instance: int, hourly: float, rps: list[float], ttft: list[float]
) -> dict:
    runs = [
        {
            "profile": "constant",
            "rate": r,
            "concurrency": None,
            "successful": 10,
            "errored": 0,
            "incomplete": 0,
            "requests_per_s": r,
            "output_tokens_per_s": r * 100,
            "ttft_ms": {"p50": t, "p95": t * 1.2},
            "itl_ms": {"p50": 20, "p95": 25},
            "tpot_ms": {"mean": 22},
            "latency_ms": {"p99": 2000},
            "concurrency_mean": r,
            "goodput_share": None,
            "cost_per_million_output_tokens_usd": None,
            "latency_samples_ms": [1000, 1100, 1200],
        }
        for r, t in zip(rps, ttft, strict=True)
    ]
    return {
        "kind": "text-generation",
        "target": "x",
        "instance_type": f"ml.inf2.tp{tp}",
        "tensor_parallel_size": tp,
        "copies": copies,
        "copies_per_instance": per_instance,
        "hourly_usd": hourly,
        "runs": runs,
        "slo": {"ttft_ms": 500},
    }


def test_recommend_picks_the_cheapest_layout_meeting_the_slos_and_shows_the_arithmetic():
    from smneuron.benchmark.generation_report import recommend

    a = _report(8, 3, 3, 15.58, [3.0, 6.0, 9.0], [200, 300, 900])  # meets TTFT p95 <= 500 ms up to 6 req/s
    b = _report(2, 1, 1, 0.99, [0.5, 1.0], [300, 600])  # meets it at 0.5 req/s per copy
    best, other = recommend([a, b], rate=12, ttft_ms=500, itl_ms=50)
    assert (best.instance_type, best.copies_needed, best.instances) == ("ml.inf2.tp2", 24, 24)
    assert best.hourly_usd == pytest.approx(24 * 0.99)
    assert (other.copies_needed, other.instances) == (6, 2)  # ceil(12 / (6 / 3)) = 6 copies; ceil(6 / 3) = 2
    assert (
        "ceil(12 / 2.00) = 6 copies; ceil(6 / 3) = 2 instance(s) x $15.580/h = $31.16/h" in other.arithmetic
    )
    assert recommend([b], rate=1, ttft_ms=100, itl_ms=None) == []


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, (
        "headless Chromium is needed to check the HTML report: scripts/test.sh installs it (apt-get install chromium)"
    )
    return found


@pytest.mark.e2e
def test_reports_json_csv_and_an_html_page_that_renders_in_chromium(tmp_path):
    from PIL import Image

    from smneuron.benchmark.generation import run_generation
    from smneuron.benchmark.generation_metrics import Slo
    from smneuron.benchmark.generation_report import write_csv, write_html, write_pngs
    from smneuron.benchmark.prompts import completion_body

    with ScriptedServerCtx() as url:
        report = run_generation(
            bodies=[completion_body("a b", 8)],
            url=url,
            profile="concurrent",
            concurrencies=[1, 3],
            duration_s=1.0,
            slo=Slo(ttft_ms=200),
            instance_type="ml.inf2.xlarge",
        )
    data = json.loads(json.dumps(report.to_dict()))
    assert data["kind"] == "text-generation" and data["schema_version"] == 1 and data["price_source"]
    assert {"ttft_ms", "itl_ms", "tpot_ms", "goodput_share", "cost_per_million_output_tokens_usd"} <= set(
        data["runs"][0]
    )
    rows = write_csv(data, tmp_path / "r.csv").read_text().splitlines()
    assert len(rows) == 3 and rows[0].startswith("profile,rate,concurrency") and "ttft_ms_p99" in rows[0]
    assert sorted(p.name for p in write_pngs(data, tmp_path / "png")) == [
        "latency_histograms.png",
        "latency_vs_rate.png",
        "tokens_vs_concurrency.png",
    ]
    page = write_html(data, tmp_path / "r.html")
    assert "http://" not in page.read_text().replace(data["target"], "")  # self-contained: nothing to fetch
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'chrome'}",
    ]
    dom = subprocess.run(
        [_chromium(), *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    assert dom.count("<tr>") >= 3 + 8 and dom.count("<img") == 3
    subprocess.run(
        [
            _chromium(),
            *flags,
            "--window-size=1200,1600",
            f"--screenshot={tmp_path / 'shot.png'}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    shot = Image.open(tmp_path / "shot.png").convert("RGB")
    assert (
        len(shot.resize((300, 400)).getcolors(maxcolors=1 << 20)) > 200
    )  # the plots drew (a blank or broken page has a few colors)


class ScriptedServerCtx:
    def __enter__(self) -> str:
        from smneuron.local.generation.scripted import Script, ScriptedServer

        self.server = ScriptedServer(Script(ttft_ms=20, itl_ms=5))
        return self.server.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)


def test_bench_cli_for_text_generation_and_its_mistakes(tiny_llama, tmp_path):
    from conftest import run_cli

    with ScriptedServerCtx() as url:
        code, out, err = run_cli(
            "bench",
            "--url",
            url,
            "--prompt-tokens",
            "24,4,16,32",
            "--output-tokens",
            "6",
            "--tokenizer",
            str(tiny_llama),
            "--rate-type",
            "synchronous",
            "--duration",
            "1",
            "--slo-ttft-ms",
            "500",
            "-o",
            str(tmp_path / "a.json"),
            "--html",
            str(tmp_path / "a.html"),
        )
        assert code == 0, err
        assert "TTFT p50" in out and "Highest rate with goodput >= 99%" in out
        code, out, err = run_cli(
            "bench", "compare", str(tmp_path / "a.json"), str(tmp_path / "a.json"), "--json"
        )
        assert code == 0 and json.loads(out)["runs"][0]["output_tokens_per_s"][2] == pytest.approx(1.0)
        code, out, err = run_cli("bench", "--url", url, "--output-tokens", "6")
        assert code == 1 and "--prompt-tokens N with --tokenizer" in err
        code, out, err = run_cli(
            "bench", "--url", url, "--prompt-tokens", "many", "--tokenizer", str(tiny_llama)
        )
        assert code == 2 and "--prompt-tokens" in err
        code, out, err = run_cli("bench", "--url", url, "--output-tokens", "inf")  # was an OverflowError
        assert code == 2 and "--output-tokens 'inf' is not N or N,stdev,min,max" in err
        # past the model's positions: 1e9 was cut to a million tokens without a word and then tokenized for minutes
        too_long = ["--prompt-tokens", "1e9", "--output-tokens", "6", "--tokenizer", str(tiny_llama)]
        code, out, err = run_cli("bench", "--url", url, *too_long)
        assert (
            code == 2 and "passes the 512 positions of the model" in err and "max_position_embeddings" in err
        )
        # the prompts file the refusal above names (--dataset): it was passed twice, "Unexpected error: TypeError"
        prompts = tmp_path / "prompts.jsonl"
        prompts.write_text('{"prompt": "hello there"}\n{"messages": [{"role": "user", "content": "hi"}]}\n')
        window = ["--rate-type", "synchronous", "--duration", "1", "--output-tokens", "6", "--json"]
        code, out, err = run_cli("bench", "--url", url, "--dataset", str(prompts), *window)
        assert code == 0 and json.loads(out)["runs"][0]["successful"] > 0, err
        code, out, err = run_cli(
            "bench", "--url", url, "--dataset", str(prompts), "--data", str(prompts), *window
        )
        assert code == 2 and "--data and --dataset both name the prompts file" in err
    code, out, err = run_cli(
        "bench",
        "--url",
        "http://127.0.0.1:9",
        "--prompt-tokens",
        "8",
        "--tokenizer",
        str(tiny_llama),
        "--rate-type",
        "synchronous",
        "--duration",
        "0.5",
    )
    assert code == 1 and "Cannot reach http://127.0.0.1:9" in err and "Unexpected" not in err  # at once
    assert Path(tmp_path / "a.html").read_text().startswith("<!doctype html>")


def test_a_notebook_benches_text_generation_from_lengths_and_a_tokenizer(tiny_llama):
    """`smneuron.run_generation_bench`: what `bench --prompt-tokens --output-tokens` does, from Python."""
    import smneuron
    from smneuron.local.generation.scripted import Script, ScriptedServer

    with ScriptedServer(Script(ttft_ms=5, itl_ms=1)) as url:
        report = smneuron.run_generation_bench(
            url=url,
            prompt_tokens=16,
            output_tokens=6,
            tokenizer=tiny_llama / "tokenizer.json",
            profile="synchronous",
            duration_s=1.0,
            copies=1,
            copies_per_instance=3,
            instance_type="ml.inf2.48xlarge",
        )
    (run,) = report.runs
    assert run.successful > 0 and run.errored == 0
    assert run.prompt_tokens["min"] == run.prompt_tokens["max"] == 16  # exact to the tokenizer
    assert report.load["output_tokens"]["mean"] == 6 and report.instance_count == pytest.approx(1 / 3)


def test_a_text_generation_run_with_too_many_errors_fails(tiny_llama, tmp_path):
    """Every 5th stream fails: 20% errors is above the default 1%, so the bench exits 1 (issue 22 #12)."""
    from conftest import run_cli

    from smneuron.local.generation.scripted import Script, ScriptedServer

    args = ["bench", "--prompt-tokens", "8", "--output-tokens", "4", "--tokenizer", str(tiny_llama)]
    args += ["--rate-type", "synchronous", "--duration", "1", "--max-requests", "10"]
    with ScriptedServer(Script(ttft_ms=2, itl_ms=1, error_every=5)) as url:
        code, out, err = run_cli(*args, "--url", url, "-o", str(tmp_path / "r.json"))
        assert code == 1 and "2 of 10 requests" in err and "(20.0%)" in err
        assert json.loads((tmp_path / "r.json").read_text())["runs"][0]["errored"] == 2
        code, out, err = run_cli(*args, "--url", url, "--max-error-rate", "0.25")
        assert code == 0, err
