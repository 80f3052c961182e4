"""Agreement of a served text-generation model with its reference: the text-generation pipeline's gate.

The *reference* is the uncompiled model in fp32 on CPU (transformers): for each evaluation text, its greedy
continuation and the log-probability of every token of the text. The *candidate* is the served model (a
staging inference component of the optimum-neuron vLLM container, or the embedded SageMaker's copy),
asked the same prompts at temperature 0, and, where the container returns them, the prompt's
log-probabilities (OpenAI completions ``echo`` + ``logprobs``, which vLLM implements as prompt logprobs).

Metrics (both continuations re-tokenized with the model's tokenizer, so the comparison does not depend
on how a server splits its output):

- ``prefix_match_mean``: per prompt, the share of the reference continuation's tokens the candidate
  reproduces before the first difference; the mean over prompts (1.0: identical);
- ``first_tokens_match``: the share of prompts whose first N tokens match;
- ``perplexity_rel_diff``: |candidate perplexity / reference perplexity - 1| over all evaluation texts
  (None when the container returned no log-probabilities: that gate is then not applied, and the summary
  says so).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from smneuron.evaluation.scoring import Evaluation, EvaluationError, Gate, Record, verdict
from smneuron.specs.models import GenerationThresholds

TOKENIZER_DIR = "tokenizer"


def generation_request(text: str, max_new_tokens: int) -> dict:
    """The greedy completion request both sides answer (temperature 0: vLLM's greedy decoding)."""
    return {"prompt": text, "max_tokens": max_new_tokens, "temperature": 0}


def logprobs_request(text: str) -> dict:
    """Prompt log-probabilities, the OpenAI completions way: echo the prompt with its token logprobs."""
    return {"prompt": text, "max_tokens": 1, "temperature": 0, "echo": True, "logprobs": 0}


def reference_outputs(
    model_dir: str | Path, records: Sequence[Record], max_new_tokens: int, out_dir: str | Path
) -> list[dict]:
    """Greedy continuations and per-token log-probabilities of the uncompiled model on CPU (fp32); the
    model's tokenizer is saved to ``out_dir/tokenizer`` for the scorer."""
    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(model_dir))
    model = transformers.AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    tokenizer.save_pretrained(str(Path(out_dir) / TOKENIZER_DIR))
    out = []
    for record in records:
        text = _text(record)
        ids = tokenizer(text, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0]
            logp = torch.log_softmax(logits[:-1].float(), dim=-1)
            token_logprobs = logp.gather(1, ids[0, 1:].unsqueeze(1)).squeeze(1)
            generated = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=tokenizer.eos_token_id,
            )[0, ids.shape[1] :]
        out.append(
            {
                "continuation": tokenizer.decode(generated, skip_special_tokens=True),
                "prompt_logprob_sum": float(token_logprobs.sum()),
                "prompt_logprob_count": int(token_logprobs.numel()),
            }
        )
    return out


def collect(
    invoke: Callable[[dict], dict | None], records: Sequence[Record], max_new_tokens: int
) -> list[dict]:
    """The candidate's answers: ``invoke(request)`` returns the container's JSON answer, or None when it
    refused the request (a 4xx): only the log-probability request may be refused."""
    out = []
    for record in records:
        text = _text(record)
        answer = invoke(generation_request(text, max_new_tokens))
        if answer is None:
            raise EvaluationError(f"The candidate refused a plain completion request for {text[:60]!r}.")
        entry: dict[str, Any] = {"continuation": _choice_text(answer)}
        scored = invoke(logprobs_request(text))
        entry.update(_prompt_logprobs(scored) if scored else {})
        out.append(entry)
    return out


def _choice_text(answer: dict) -> str:
    choice = (answer.get("choices") or [{}])[0]
    if "text" in choice:
        return str(choice["text"])
    return str((choice.get("message") or {}).get("content") or "")


def _prompt_logprobs(answer: dict) -> dict:
    """Sum and count of the prompt's token log-probabilities from an echo answer ({} when absent)."""
    choice = (answer.get("choices") or [{}])[0]
    values = ((choice.get("logprobs") or {}).get("token_logprobs")) or []
    prompt_tokens = (answer.get("usage") or {}).get("prompt_tokens")
    if not values or not prompt_tokens:
        return {}
    prompt = [v for v in values[1:prompt_tokens] if v is not None]  # the first token has no context
    return {"prompt_logprob_sum": float(sum(prompt)), "prompt_logprob_count": len(prompt)}


def score(
    reference: Sequence[dict],
    candidate: Sequence[dict],
    records: Sequence[Record],
    thresholds: GenerationThresholds,
    tokenizer_dir: str | Path,
) -> Evaluation:
    """Compare the candidate's generations with the reference's and apply the gates.

    Raises:
        EvaluationError: the two sides answered a different number of prompts.
    """
    if not (len(reference) == len(candidate) == len(records)):
        raise EvaluationError(
            f"{len(records)} prompts but {len(reference)} reference and {len(candidate)} candidate answers."
        )
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(tokenizer_dir) / "tokenizer.json"))
    tokenizer.no_padding()  # a tokenizer.json saved with padding or truncation would compare pads, or cut answers
    tokenizer.no_truncation()

    def tokens(text: str) -> list[int]:
        return tokenizer.encode(text, add_special_tokens=False).ids

    n = thresholds.first_tokens
    shares, first_ok, examples = [], 0, []
    for ref, cand, record in zip(reference, candidate, records, strict=True):
        r, c = tokens(ref["continuation"]), tokens(cand["continuation"])
        same = next((i for i, (a, b) in enumerate(zip(r, c, strict=False)) if a != b), min(len(r), len(c)))
        shares.append(1.0 if not r and not c else same / max(len(r), 1))
        first_ok += r[:n] == c[:n]
        if same < len(r) and len(examples) < 3:
            examples.append(
                f"{_text(record)[:40]!r}: reference {ref['continuation'][:40]!r}, served {cand['continuation'][:40]!r}"
            )
    metrics: dict[str, float | None] = {
        "prefix_match_mean": sum(shares) / len(shares),
        "first_tokens_match": first_ok / len(shares),
        "perplexity_reference": _perplexity(reference),
        "perplexity_candidate": _perplexity(candidate),
    }
    ref_ppl, cand_ppl = metrics["perplexity_reference"], metrics["perplexity_candidate"]
    metrics["perplexity_rel_diff"] = abs(cand_ppl / ref_ppl - 1) if ref_ppl and cand_ppl is not None else None
    metrics = {k: None if v is None else round(float(v), 8) for k, v in metrics.items()}
    gates = [
        Gate.check(metrics, "prefix_match_mean", "min_prefix_match", thresholds.min_prefix_match, ">="),
        Gate.check(
            metrics,
            "first_tokens_match",
            f"min_first_tokens_match, first {n}",
            thresholds.min_first_tokens_match,
            ">=",
        ),
    ]
    notes = []
    if metrics["perplexity_rel_diff"] is None:
        notes.append("perplexity not compared: the container returned no prompt log-probabilities")
    else:
        gates.append(
            Gate.check(
                metrics, "perplexity_rel_diff", "max_perplexity_diff", thresholds.max_perplexity_diff, "<="
            )
        )
    passed, summary = verdict(gates)
    if not passed and examples:
        summary += ". First differences: " + " | ".join(examples)
    if notes:
        summary += " (" + "; ".join(notes) + ")"
    return Evaluation("text-generation", len(records), metrics, gates, passed, summary)


def _perplexity(answers: Sequence[dict]) -> float | None:
    if any("prompt_logprob_count" not in a for a in answers):
        return None
    count = sum(a["prompt_logprob_count"] for a in answers)
    return math.exp(-sum(a["prompt_logprob_sum"] for a in answers) / count) if count else None


def _text(record: Record) -> str:
    if not isinstance(record.inputs, str):
        raise EvaluationError(
            f'Text-generation evaluation records need a text in "inputs", got {json.dumps(record.inputs)[:80]}.'
        )
    return record.inputs
