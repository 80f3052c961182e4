"""Scoring a served causal LM through Chat Completions: SageMaker's /openai/v1 path (``evaluate --via openai``).

/openai/v1 serves Chat Completions only (docs/openai.md), so the Completions requests of ``evaluation.generation`` (a
raw prompt, ``echo`` for the prompt's log-probabilities, teacher forcing over the reference's continuation) cannot be
sent. What Chat Completions does give, and what this module asks for (vLLM's OpenAI server, serving_chat.py:
``_create_chat_logprobs``; ``logprobs: true`` with ``top_logprobs`` N, token ids as ``token_id:N`` on
``return_tokens_as_token_ids``):

- the greedy continuation of the prompt wrapped in the model's chat template (one user message, the generation prompt
  added, no special tokens added to the rendered text: what vLLM's ``_preprocess_chat`` sends the engine). The
  reference renders the same template from the model's tokenizer, so both sides continue the same token ids;
- the top N log-probabilities at each generated position, conditioned on the candidate's own tokens. Up to and
  including the first token where the candidate's greedy choice differs from the reference's, the two sides read the
  same prefix, so those positions are compared by Neuron's criteria (``evaluation.logits``) exactly as teacher forcing
  would; past it the prefixes differ and nothing can be compared (Chat Completions cannot teacher-force), and the
  summary says how many positions that left out;
- no prompt log-probabilities: the perplexity gate is not applied, and the summary says so.

A model whose tokenizer has no chat template cannot be evaluated this way (vLLM refuses its chat requests too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from smneuron.errors import InvocationError
from smneuron.evaluation import logits
from smneuron.evaluation.scoring import EvaluationError, Record


def chat_request(text: str, max_new_tokens: int, top: int) -> dict:
    """The greedy chat completion both sides answer, with the top ``top`` log-probabilities per generated token."""
    return {
        "messages": [{"role": "user", "content": text}],
        "max_tokens": max_new_tokens,
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": top,
        "return_tokens_as_token_ids": True,
    }


def chat_prompt_ids(tokenizer: Any, text: str) -> list[int]:
    """The token ids vLLM's chat completions feed the engine for ``text`` as one user message.

    Raises:
        EvaluationError: the tokenizer has no chat template.
    """
    if not getattr(tokenizer, "chat_template", None):
        raise EvaluationError(
            "The model's tokenizer has no chat template, so /openai/v1 (Chat Completions only) cannot be compared "
            "with it: vLLM refuses chat requests for such a model, and a raw prompt needs the Completions API.",
            hint="Evaluate through InvokeEndpoint (--via invoke, the default), which sends raw-prompt completions.",
        )
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
    )
    return list(tokenizer(rendered, add_special_tokens=False)["input_ids"])


def collect_chat(
    invoke: Callable[[dict], dict],
    records: Sequence[Record],
    reference: Sequence[dict],
    max_new_tokens: int,
    top: int,
    text_of: Callable[[Record], str],
) -> list[dict]:
    """The candidate's chat answers, each with the positions comparable to the reference's (``teacher``: per
    position, [token id, logprob] pairs, best first) and how many positions past a divergence were not compared.
    A candidate that refuses the log-probabilities (a 4xx) is asked again without them: agreement is then scored
    on the texts alone, and the summary says why logits were not matched.

    Raises:
        InvocationError: the candidate refused a plain chat completion, or failed.
    """
    out = []
    for record, ref in zip(records, reference, strict=True):
        request = chat_request(text_of(record), max_new_tokens, top)
        try:
            answer = invoke(request)
        except InvocationError as e:
            if not 400 <= e.status < 500:
                raise
            plain = {k: v for k, v in request.items() if k not in ("logprobs", "top_logprobs")}
            answer = invoke({k: v for k, v in plain.items() if k != "return_tokens_as_token_ids"})
        choice = (answer.get("choices") or [{}])[0]
        entry: dict[str, Any] = {
            "continuation": str((choice.get("message") or {}).get("content") or ""),
            "chat": True,
        }
        read = _positions(choice)
        if read is not None:
            ids, tops = read
            wanted = ref.get("continuation_ids") or []
            same = next((i for i, (a, b) in enumerate(zip(ids, wanted, strict=False)) if a != b), None)
            keep = min(len(ids), len(wanted)) if same is None else same + 1
            entry["teacher"] = [sorted(t.items(), key=lambda x: -x[1]) for t in tops[:keep]]
            entry["top_logprobs_returned"] = top
            entry["positions_not_compared"] = max(0, len(wanted) - keep)
        out.append(entry)
    return out


def _positions(choice: dict) -> tuple[list[int], list[dict[int, float]]] | None:
    """The generated token ids and each position's top log-probabilities (id -> logprob) of a chat answer; None when
    it has none, or names tokens as text rather than ids."""
    content = (choice.get("logprobs") or {}).get("content")
    if not content:
        return None
    ids, tops = [], []
    for entry in content:
        token, top = str(entry.get("token", "")), entry.get("top_logprobs") or []
        if not token.startswith(logits.TOKEN_ID) or not top:
            return None
        ids.append(int(token[len(logits.TOKEN_ID) :]))
        found = {}
        for alt in top:
            key = str(alt.get("token", ""))
            if not key.startswith(logits.TOKEN_ID):
                return None
            found[int(key[len(logits.TOKEN_ID) :])] = float(alt["logprob"])
        tops.append(found)
    return ids, tops
