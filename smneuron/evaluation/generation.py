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
  says so);
- ``logit_match`` and ``bhattacharyya_mean``: Neuron's own criteria (``evaluation.logits``, with their sources): the
  candidate teacher-forced on the reference's greedy continuation, its top log-probabilities per position against
  the reference's logits; the summary names the first failing position (prompt, position, both tokens, both
  log-probabilities) and the top-k slices the container's answers could not check;
- ``task_exact_match``: with labels, the share of prompts whose continuation starts with the label.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from smneuron.evaluation import logits
from smneuron.evaluation.chat import chat_prompt_ids
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
    model_dir: str | Path,
    records: Sequence[Record],
    max_new_tokens: int,
    out_dir: str | Path,
    *,
    chat: bool = False,
) -> list[dict]:
    """Greedy continuations and per-token log-probabilities of the uncompiled model on CPU (fp32); the
    model's tokenizer is saved to ``out_dir/tokenizer`` for the scorer. ``chat``: each text is continued as a chat
    completion continues it (``chat.chat_prompt_ids``: the model's chat template, one user message).

    Raises:
        EvaluationError: ``chat`` and the tokenizer has no chat template.
    """
    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(model_dir))
    model = transformers.AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    tokenizer.save_pretrained(str(Path(out_dir) / TOKENIZER_DIR))
    out = []
    for record in records:
        text = text_of(record)
        ids = (
            torch.tensor([chat_prompt_ids(tokenizer, text)])
            if chat
            else tokenizer(text, return_tensors="pt")["input_ids"]
        )
        with torch.no_grad():
            scores = model(input_ids=ids).logits[0]
            logp = torch.log_softmax(scores[:-1].float(), dim=-1)
            token_logprobs = logp.gather(1, ids[0, 1:].unsqueeze(1)).squeeze(1)
            generated = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=tokenizer.eos_token_id,
            )[0, ids.shape[1] :]
            # teacher forcing: the logits that predict each continuation token, read in one pass over the sequence
            every = torch.cat([ids[0], generated])
            forced = (
                model(input_ids=every.unsqueeze(0)).logits[0, ids.shape[1] - 1 : every.numel() - 1].float()
            )
        out.append(
            {
                "continuation": tokenizer.decode(generated, skip_special_tokens=True),
                "prompt_logprob_sum": float(token_logprobs.sum()),
                "prompt_logprob_count": int(token_logprobs.numel()),
                "prompt_ids": ids[0].tolist(),
                "continuation_ids": generated.tolist(),
                "positions": [_top(row, torch) for row in forced],
            }
        )
    return out


def _top(row: Any, torch: Any) -> dict:
    """The reference's most likely tokens at one position, best first: ids, logits, log-probabilities."""
    values, ids = torch.topk(row, min(logits.REFERENCE_TOP, row.numel()))
    logp = torch.log_softmax(row, dim=-1)[ids]
    return {
        "ids": ids.tolist(),
        "logits": [round(float(v), 6) for v in values],
        "logprobs": [round(float(v), 6) for v in logp],
    }


def collect(
    invoke: Callable[[dict], dict | None],
    records: Sequence[Record],
    max_new_tokens: int,
    reference: Sequence[dict] | None = None,
    top_logprobs: int = 20,
) -> list[dict]:
    """The candidate's answers: ``invoke(request)`` returns the container's JSON answer, or None when it
    refused the request (a 4xx): only the log-probability requests may be refused. With the ``reference``
    (``reference_outputs``), also the candidate's top ``top_logprobs`` log-probabilities teacher-forced on the
    reference's continuation (``teacher``: per position, [token id, logprob] pairs)."""
    out = []
    for n, record in enumerate(records):
        text = text_of(record)
        answer = invoke(generation_request(text, max_new_tokens))
        if answer is None:
            raise EvaluationError(f"The candidate refused a plain completion request for {text[:60]!r}.")
        entry: dict[str, Any] = {"continuation": _choice_text(answer)}
        scored = invoke(logprobs_request(text))
        entry.update(_prompt_logprobs(scored) if scored else {})
        ref = reference[n] if reference is not None else {}
        if ref.get("continuation_ids"):
            ids = ref["prompt_ids"] + ref["continuation_ids"]
            forced = invoke(logits.teacher_request(ids, top_logprobs))
            found = (
                logits.candidate_positions(forced, len(ref["prompt_ids"]), len(ref["continuation_ids"]))
                if forced
                else None
            )
            if found is not None:
                entry["teacher"] = [sorted(p.items(), key=lambda x: -x[1]) for p in found]
                entry["top_logprobs_returned"] = top_logprobs
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
        EvaluationError: the two sides answered a different number of prompts; a task floor without labels.
    """
    if not (len(reference) == len(candidate) == len(records)):
        raise EvaluationError(
            f"{len(records)} prompts but {len(reference)} reference and {len(candidate)} candidate answers."
        )
    tokenizer = _tokenizer(tokenizer_dir)
    metrics, examples = _agreement(reference, candidate, records, thresholds.first_tokens, tokenizer)
    matching = _matching(reference, candidate, thresholds)
    metrics["logit_match"] = matching.share if matching else None
    metrics["bhattacharyya_mean"] = matching.bhattacharyya if matching else None
    labelled = [(c, r) for c, r in zip(candidate, records, strict=True) if r.label is not None]
    metrics["task_exact_match"] = (
        sum(c["continuation"].strip().startswith(str(r.label).strip()) for c, r in labelled) / len(labelled)
        if labelled
        else None
    )
    metrics = {k: None if v is None else round(float(v), 8) for k, v in metrics.items()}
    chat = any(c.get("chat") for c in candidate)
    gates, notes = _gates(
        metrics,
        thresholds,
        matching,
        chat,
        skipped=sum(c.get("positions_not_compared", 0) for c in candidate),
    )
    if thresholds.min_task_exact_match is not None:
        if not labelled:
            raise EvaluationError(
                "min_task_exact_match is set but no evaluation record has a label.",
                hint='Add the expected answer as "label" to the JSONL lines, or unset min_task_exact_match.',
            )
        t = thresholds.min_task_exact_match
        gates.append(Gate.check(metrics, "task_exact_match", "min_task_exact_match", t, ">="))
    passed, summary = verdict(gates)
    first = matching.first_failure if matching else None
    if first is not None:
        summary += ". First logit mismatch: " + _described(first, records, tokenizer)
    if not passed and examples:
        summary += ". First differences: " + " | ".join(examples)
    if notes:
        summary += " (" + "; ".join(notes) + ")"
    return Evaluation("text-generation", len(records), metrics, gates, passed, summary)


def _tokenizer(tokenizer_dir: str | Path) -> Any:
    """The reference's tokenizer, as it counts continuations: no padding, no truncation (a tokenizer.json saved with
    them would compare pads, or cut answers)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(tokenizer_dir) / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def _agreement(
    reference: Sequence[dict], candidate: Sequence[dict], records: Sequence[Record], n: int, tokenizer: Any
) -> tuple[dict[str, float | None], list[str]]:
    """Greedy agreement (the share of each reference continuation matched before the first difference, the prompts
    whose first ``n`` tokens match) and perplexity, with up to three first differences to show."""

    def tokens(text: str) -> list[int]:
        return tokenizer.encode(text, add_special_tokens=False).ids

    shares, first_ok, examples = [], 0, []
    for ref, cand, record in zip(reference, candidate, records, strict=True):
        r, c = tokens(ref["continuation"]), tokens(cand["continuation"])
        same = next((i for i, (a, b) in enumerate(zip(r, c, strict=False)) if a != b), min(len(r), len(c)))
        shares.append(1.0 if not r and not c else same / max(len(r), 1))
        first_ok += r[:n] == c[:n]
        if same < len(r) and len(examples) < 3:
            examples.append(
                f"{text_of(record)[:40]!r}: reference {ref['continuation'][:40]!r}, served {cand['continuation'][:40]!r}"
            )
    ref_ppl, cand_ppl = _perplexity(reference), _perplexity(candidate)
    metrics: dict[str, float | None] = {
        "prefix_match_mean": sum(shares) / len(shares),
        "first_tokens_match": first_ok / len(shares),
        "perplexity_reference": ref_ppl,
        "perplexity_candidate": cand_ppl,
        "perplexity_rel_diff": abs(cand_ppl / ref_ppl - 1) if ref_ppl and cand_ppl is not None else None,
    }
    return metrics, examples


def _gates(
    metrics: dict, t: GenerationThresholds, matching: Any, chat: bool, *, skipped: int
) -> tuple[list[Gate], list[str]]:
    """The gates the metrics allow, and a note for each comparison the container's answers did not allow."""
    gates = [
        Gate.check(metrics, "prefix_match_mean", "min_prefix_match", t.min_prefix_match, ">="),
        Gate.check(
            metrics,
            "first_tokens_match",
            f"min_first_tokens_match, first {t.first_tokens}",
            t.min_first_tokens_match,
            ">=",
        ),
    ]
    notes = []
    if metrics["perplexity_rel_diff"] is None:
        why = "Chat Completions (/openai/v1) return" if chat else "the container returned"
        notes.append(f"perplexity not compared: {why} no prompt log-probabilities")
    else:
        gates.append(
            Gate.check(metrics, "perplexity_rel_diff", "max_perplexity_diff", t.max_perplexity_diff, "<=")
        )
    if matching is None:
        asked = "logprobs + top_logprobs" if chat else "echo + logprobs"
        notes.append(
            "logits not matched: the container returned no top log-probabilities as token ids (vLLM gives them for "
            f"{asked} + return_tokens_as_token_ids)"
        )
        return gates, notes
    gates.append(Gate.check(metrics, "logit_match", "min_logit_match", t.min_logit_match, ">="))
    gates.append(Gate.check(metrics, "bhattacharyya_mean", "min_bhattacharyya", t.min_bhattacharyya, ">="))
    if skipped:
        notes.append(
            f"{skipped} generated position(s) after a prompt's first differing token (or past the served answer's "
            "end) not compared (Chat Completions cannot teacher-force: the two sides' prefixes differ there)"
        )
    if matching.unchecked:
        notes.append(
            f"logit matching checked {', '.join(matching.checked) or 'no top-k slice'}; "
            f"{', '.join(matching.unchecked)} not checked: the container gave {matching.returned} log-probabilities "
            "per position (vLLM's --max-logprobs)"
        )
    return gates, notes


def _matching(
    reference: Sequence[dict], candidate: Sequence[dict], thresholds: GenerationThresholds
) -> logits.Matching | None:
    """The logit matching of every prompt both sides have positions for; None when the candidate gave none."""
    if not all("teacher" in c and "positions" in r for r, c in zip(reference, candidate, strict=True)):
        return None
    return logits.compare(  # a chat answer's comparable positions may be fewer than the reference's (evaluation.chat)
        [r["positions"][: len(c["teacher"])] for r, c in zip(reference, candidate, strict=True)],
        [[{int(t): float(v) for t, v in pos} for pos in c["teacher"]] for c in candidate],
        returned=min(c["top_logprobs_returned"] for c in candidate),
        divergence_tol=thresholds.divergence_tol,
    )


def _described(p: logits.Position, records: Sequence[Record], tokenizer: Any) -> str:
    """Where and how a position failed, with both tokens as text and their log-probabilities."""

    def token(t: int) -> str:
        return repr(tokenizer.decode([t], skip_special_tokens=False))

    return (
        f"prompt {p.prompt + 1} ({text_of(records[p.prompt])[:40]!r}), generated position {p.index + 1}: reference "
        f"{token(p.reference_token)} (id {p.reference_token}, logprob {p.reference_logprob:.4f}), served "
        f"{token(p.candidate_token)} (id {p.candidate_token}, logprob {p.candidate_logprob:.4f}); {p.failed}"
    )


def _perplexity(answers: Sequence[dict]) -> float | None:
    if any("prompt_logprob_count" not in a for a in answers):
        return None
    count = sum(a["prompt_logprob_count"] for a in answers)
    return math.exp(-sum(a["prompt_logprob_sum"] for a in answers) / count) if count else None


def text_of(record: Record) -> str:
    """The prompt of an evaluation record (its text).

    Raises:
        EvaluationError: the record's inputs are not a text.
    """
    if not isinstance(record.inputs, str):
        raise EvaluationError(
            f'Text-generation evaluation records need a text in "inputs", got {json.dumps(record.inputs)[:80]}.'
        )
    return record.inputs
