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
    # the other kind's gate or candidate is refused by the kind, as deploy and bench refuse them; no candidate, or a
    # URL asked for the /openai/v1 path: usage errors, with the way to call it
    code, _, err = run_cli(
        "evaluate", str(data), "--model", str(tiny_llama), "--url", "http://x", "--min-cosine", "0.9",
        "--outputs", str(data),
    )  # fmt: skip
    said = " ".join(err.split())
    assert code == 1 and "This is a text generation endpoint" in said, err
    assert "--min-cosine (an embeddings gate)" in said and "--outputs (a Batch Transform .out file)" in said
    assert "evaluations take --min-logit-match, --min-bhattacharyya, --min-task-exact-match" in said
    code, _, err = run_cli("evaluate", str(data), "--model", str(tiny_llama))
    assert code == 2 and "--endpoint NAME or --url URL" in " ".join(err.split())
    code, _, err = run_cli(
        "evaluate", str(data), "--model", str(tiny_llama), "--url", "http://x", "--via", "openai"
    )
    assert code == 1 and "--via openai is an endpoint's path" in " ".join(err.split())
    # an encoder's evaluation refuses text generation's gate and path, the same way
    code, _, err = run_cli("evaluate", str(data), "--task", "feature-extraction", "--url", "http://x",
                           "--reference", str(data), "--min-logit-match", "0.9", "--via", "openai")  # fmt: skip
    said = " ".join(err.split())
    assert code == 1 and "This is an encoder endpoint" in said and "--min-logit-match (" in said
    assert "--via (" in said and "evaluations take --min-top1-agreement" in said


def test_the_stand_in_answers_chat_logprobs_as_vllm_does(tiny_llama, tmp_path):
    """Chat completions with logprobs + top_logprobs: per generated token its id (token_id:N on request), logprob, bytes
    and the top N, in vLLM's shape; vLLM's refusals of top_logprobs without logprobs, of more than --max-logprobs, and of
    chat for a model without a chat template."""
    import httpx

    from smneuron.compilation.generation import compile_generation
    from smneuron.specs.models import CompileSpec

    spec = CompileSpec(task="text-generation", target="cpu", sequence_length=128)
    art = compile_generation(tiny_llama, tmp_path / "a", spec).out_dir
    url, server = _served(art, tmp_path)
    chat = f"{url}/v1/chat/completions"
    body = {"messages": [{"role": "user", "content": "hello there"}], "max_tokens": 4, "temperature": 0}
    try:
        answer = httpx.post(
            chat, json={**body, "logprobs": True, "top_logprobs": 3, "return_tokens_as_token_ids": True}
        )
        content = answer.json()["choices"][0]["logprobs"]["content"]
        assert len(content) == answer.json()["usage"]["completion_tokens"] == 4
        for entry in content:
            assert entry["token"].startswith("token_id:") and entry["logprob"] <= 0
            assert entry["bytes"] == list(entry["token"].encode())
            assert (
                len(entry["top_logprobs"]) == 3 and entry["top_logprobs"][0]["token"] == entry["token"]
            )  # greedy
        plain = httpx.post(chat, json=body).json()["choices"][0]
        assert "logprobs" not in plain or plain["logprobs"] is None
        for extra, words in (
            ({"top_logprobs": 3}, "when using `top_logprobs`, `logprobs` must be set to true."),
            ({"logprobs": True, "top_logprobs": 21}, "greater than max allowed: 20"),
            ({"logprobs": True, "top_logprobs": -2}, "`top_logprobs` must be a positive value or -1."),
        ):
            refused = httpx.post(chat, json={**body, **extra})
            assert refused.status_code == 400 and words in refused.text, refused.text
    finally:
        server.shutdown()
    (art / "tokenizer_config.json").write_text(
        json.dumps(
            {
                k: v
                for k, v in json.loads((art / "tokenizer_config.json").read_text()).items()
                if k != "chat_template"
            }
        )
    )
    (art / "chat_template.jinja").unlink(missing_ok=True)
    url, server = _served(art, tmp_path)
    try:
        refused = httpx.post(f"{url}/v1/chat/completions", json=body)
        assert refused.status_code == 400 and "default chat template is no longer allowed" in refused.text
    finally:
        server.shutdown()


def test_chat_completions_are_scored_up_to_the_first_difference_and_say_what_they_cannot_compare(
    tiny_llama, tmp_path
):
    """The /openai/v1 path's scoring (evaluation.chat), against the stand-in's chat answers: the same weights match every
    comparable position; other weights fail at the first, and the summary says what Chat Completions left out."""
    import httpx

    from smneuron.compilation.generation import compile_generation
    from smneuron.evaluation.chat import collect_chat
    from smneuron.evaluation.generation import TOKENIZER_DIR, reference_outputs, text_of
    from smneuron.local.tiny_model import build_tiny_llama
    from smneuron.specs.models import CompileSpec

    spec = CompileSpec(task="text-generation", target="cpu", sequence_length=128, batch_size=2)
    records = [Record("the weather in paris is"), Record("john and mary went to")]
    t = GenerationThresholds(max_new_tokens=8)
    reference = reference_outputs(tiny_llama, records, t.max_new_tokens, tmp_path / "ref", chat=True)
    other = build_tiny_llama(
        tmp_path / "m4", seed=4
    )  # its greedy tokens part from seed 0's at positions 7 and 5
    results = {}
    for name, model in (("same", tiny_llama), ("other", other)):
        url, server = _served(compile_generation(model, tmp_path / name, spec).out_dir, tmp_path)
        try:
            chat = f"{url}/v1/chat/completions"
            candidate = collect_chat(
                lambda request, chat=chat: httpx.post(chat, json=request).json(),
                records,
                reference,
                t.max_new_tokens,
                t.top_logprobs,
                text_of,
            )
        finally:
            server.shutdown()
        results[name] = (candidate, score(reference, candidate, records, t, tmp_path / "ref" / TOKENIZER_DIR))
    candidate, same = results["same"]
    assert same.passed and same.metrics["logit_match"] == 1.0 and same.metrics["prefix_match_mean"] == 1.0
    assert all(len(c["teacher"]) == t.max_new_tokens and c["positions_not_compared"] == 0 for c in candidate)
    assert same.metrics["perplexity_rel_diff"] is None
    assert "Chat Completions (/openai/v1) return no prompt log-probabilities" in same.summary
    candidate, other = results["other"]
    assert (
        not other.passed and other.metrics["logit_match"] < 1.0 and other.metrics["prefix_match_mean"] < 1.0
    )
    assert "First logit mismatch: prompt 1 ('the weather in paris is')" in other.summary
    assert [len(c["teacher"]) for c in candidate] == [
        7,
        5,
    ]  # up to and including each prompt's first difference
    skipped = sum(c["positions_not_compared"] for c in candidate)
    assert (
        skipped > 0
        and f"{skipped} generated position(s) after a prompt's first differing token" in other.summary
    )


def test_the_sdk_request_refuses_as_the_cli_does_in_its_own_words(tiny_llama, tmp_path):
    """``smneuron.evaluate_candidate`` (what `smneuron evaluate` calls): the other kind's gates named as keywords, an
    unknown gate listed against the known ones, the /openai/v1 path refused for a URL; nothing is computed first."""
    import pytest

    from smneuron.errors import ConfigError
    from smneuron.evaluation.request import evaluate_candidate

    data = tmp_path / "prompts.jsonl"
    data.write_text('{"inputs": "hello"}\n')
    with pytest.raises(ConfigError) as refused:
        evaluate_candidate(data, model=tiny_llama, url="http://127.0.0.1:9", min_cosine=0.9)
    assert "min_cosine= (an embeddings gate)" in str(refused.value) and "--min-cosine" not in str(
        refused.value
    )
    assert "min_logit_match=" in refused.value.hint
    with pytest.raises(
        ConfigError, match="Unknown evaluate setting.s.: min_cosin. Did you mean min_cosine"
    ) as refused:
        evaluate_candidate(data, model=tiny_llama, url="http://127.0.0.1:9", min_cosin=0.9)
    assert "min_logit_match" in refused.value.hint  # every keyword the table knows
    with pytest.raises(ConfigError, match="--via openai is an endpoint's path"):
        evaluate_candidate(data, model=tiny_llama, url="http://127.0.0.1:9", via="openai")
