"""The text-generation gate's scoring: prefix agreement, first tokens, perplexity when the server gives it."""

from __future__ import annotations

import json

from smneuron.evaluation.generation import collect, score
from smneuron.evaluation.scoring import Record
from smneuron.specs.models import GenerationThresholds


def test_agreement_is_measured_on_tokens_and_a_missing_perplexity_is_said_not_passed(tiny_llama):
    records = [Record("the movie was"), Record("john works at")]
    reference = [
        {"continuation": "good and i loved it", "prompt_logprob_sum": -6.0, "prompt_logprob_count": 2},
        {"continuation": "google in london", "prompt_logprob_sum": -6.0, "prompt_logprob_count": 2},
    ]
    served = [{"continuation": "good and i hated it"}, {"continuation": "google in london"}]
    result = score(reference, served, records, GenerationThresholds(min_prefix_match=0.8), tiny_llama)
    # 3 of 5 tokens before the first difference, then 3 of 3: (0.6 + 1.0) / 2
    assert result.metrics["prefix_match_mean"] == 0.8 and result.metrics["first_tokens_match"] == 0.5
    assert result.metrics["perplexity_rel_diff"] is None
    assert not result.passed  # the first 4 tokens of one prompt differ
    assert "perplexity not compared: the container returned no prompt log-probabilities" in result.summary
    assert "'the movie was': reference 'good and i loved it', served 'good and i hated it'" in result.summary


def test_collect_reads_echoed_prompt_logprobs_and_survives_a_server_without_them():
    def with_logprobs(request: dict) -> dict:
        if request.get("echo"):
            return {
                "choices": [{"text": "a b c", "logprobs": {"token_logprobs": [None, -1.0, -2.0, -0.5]}}],
                "usage": {"prompt_tokens": 3},
            }
        return {"choices": [{"text": " c"}]}

    got = collect(with_logprobs, [Record("a b")], 4)
    # the prompt's own tokens only (the first has no context; the generated one is not the prompt's)
    assert got == [{"continuation": " c", "prompt_logprob_sum": -3.0, "prompt_logprob_count": 2}]
    refused = collect(lambda r: None if r.get("echo") else {"choices": [{"text": "x"}]}, [Record("a")], 4)
    assert refused == [{"continuation": "x"}]


def test_the_stand_in_answers_top_logprobs_as_vllm_does(tiny_llama, tmp_path):
    """echo + logprobs N: the top N per position and the token itself, keyed token_id:ID on request; more than vLLM's
    default --max-logprobs (20) is refused with vLLM's words."""
    import threading
    from http.server import ThreadingHTTPServer

    import httpx

    from smneuron.compilation.generation import compile_generation
    from smneuron.local.generation.standin import Generator, configuration, handler_for
    from smneuron.specs.models import CompileSpec

    art = compile_generation(
        tiny_llama, tmp_path / "a", CompileSpec(task="text-generation", target="cpu", sequence_length=128)
    ).out_dir
    served = configuration(art, {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(Generator(art, 2, 128), served))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/invocations"
    try:
        ids = [1, 5, 9, 12]
        body = {"prompt": ids, "max_tokens": 1, "temperature": 0, "echo": True, "logprobs": 5}
        answer = httpx.post(url, json={**body, "return_tokens_as_token_ids": True}).json()
        top = answer["choices"][0]["logprobs"]["top_logprobs"]
        assert top[0] is None and len(top) == len(ids) + 1  # the prompt's tokens and the generated one
        for position, token in enumerate(ids[1:], 1):
            entry = top[position]
            assert all(k.startswith("token_id:") for k in entry) and 5 <= len(entry) <= 6
            assert f"token_id:{token}" in entry  # the prompt's own token, as vLLM adds it
        plain = httpx.post(url, json=body).json()["choices"][0]["logprobs"]["top_logprobs"]
        assert not any(k.startswith("token_id:") for k in plain[1])  # token strings unless asked
        refused = httpx.post(url, json={**body, "logprobs": 21})
        assert refused.status_code == 400
        assert "Requested sample logprobs of 21, which is greater than max allowed: 20" in refused.text
    finally:
        server.shutdown()


def _served(artifact, tmp_path):  # type: ignore[no-untyped-def]
    """The stand-in serving ``artifact`` in this process; returns (url, server)."""
    import threading
    from http.server import ThreadingHTTPServer

    from smneuron.local.generation.standin import Generator, configuration, handler_for

    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), handler_for(Generator(artifact, 2, 128), configuration(artifact, {}))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


def test_evaluate_a_served_llm_from_the_cli_with_neurons_criteria(tiny_llama, tmp_path):
    from conftest import run_cli

    from smneuron.compilation.generation import compile_generation
    from smneuron.local.tiny_model import build_tiny_llama
    from smneuron.specs.models import CompileSpec

    spec = CompileSpec(task="text-generation", target="cpu", sequence_length=128, batch_size=2)
    same = compile_generation(tiny_llama, tmp_path / "same", spec).out_dir
    other = compile_generation(build_tiny_llama(tmp_path / "m1", seed=1), tmp_path / "other", spec).out_dir
    data = tmp_path / "prompts.jsonl"
    data.write_text('{"inputs": "the weather in paris is"}\n{"inputs": "john and mary went to"}\n')
    for artifact, passes in ((same, True), (other, False)):
        url, server = _served(artifact, tmp_path)
        try:
            code, out, err = run_cli(
                "evaluate", str(data), "--model", str(tiny_llama), "--url", url, "--json"
            )
        finally:
            server.shutdown()
        result = json.loads(out)
        assert result["passed"] is passes and code == (0 if passes else 1), err
        assert result["task"] == "text-generation" and result["metrics"]["logit_match"] == (
            1.0 if passes else 0.0
        )
        if not passes:
            assert (
                "First logit mismatch: prompt 1 ('the weather in paris is'), generated position"
                in result["summary"]
            )
    # the other kind's gate, or no candidate: usage errors, with the way to call it
    code, _, err = run_cli(
        "evaluate", str(data), "--model", str(tiny_llama), "--url", "http://x", "--min-cosine", "0.9"
    )
    assert code == 2 and "not for a text-generation model" in err
    code, _, err = run_cli("evaluate", str(data), "--model", str(tiny_llama))
    assert code == 2 and "--endpoint NAME or --url URL" in " ".join(err.split())
