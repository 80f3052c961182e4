"""Logit matching of a served causal LM against its fp32 CPU reference, the way Neuron's own projects check models.

Sources (read for this, 2026-11-25):

- NxD Inference ``check_accuracy_logits`` (aws-neuron/neuronx-distributed-inference,
  src/neuronx_distributed_inference/utils/accuracy.py): greedy decoding, the reference's logits from transformers on
  CPU, ``divergence_difference_tol=0.001`` where the greedy tokens diverge, per-top-k tolerances (``tol_map``) applied
  by ``torch_neuronx.testing.validation.logit_validation`` (not open source).
- vLLM Neuron's logit validation (awsdocs-neuron, vllm-neuron/docs/design/accuracy/logit_validation_design.md):
  teacher forcing (both sides read the reference's tokens at every step, so one divergent token does not cascade),
  ``DEFAULT_TOLERANCE_MAP`` as ``(atol, rtol)`` by top-k: 5: (1e-5, 0.011), 50: (1e-5, 0.02), 1000: (1e-5, 0.03),
  all: (1e-5, 0.05), and an aggregate Bhattacharyya coefficient >= 0.99 (``agg_bc_threshold``) as a pass route.

What a served container can give differs from what those tools read inside the process: an OpenAI-compatible server
returns log-probabilities, at most ``--max-logprobs`` per position (vLLM's default 20), not logits. So smneuron
teacher-forces through the completions API (``echo`` + ``logprobs`` over the prompt and the reference's greedy
continuation, token ids as ``token_id:N``) and, per continuation position:

- anchors the candidate's log-probabilities to logits by the reference's top token (logit = logprob + C, with C so
  that the reference's top token has its reference logit), then checks each top-k slice of the reference's tokens:
  |candidate - reference| <= atol + rtol * |reference|. A slice larger than what the container returned is not
  checked, and the report says so (top-50, top-1000 and all, at vLLM's default of 20);
- a greedy divergence (the candidate's top token is not the reference's) is tolerated only where the reference's
  logits of the two tokens differ by at most ``divergence_tol`` (a near tie);
- the Bhattacharyya coefficient sum(sqrt(p * q)) of the two next-token distributions over the candidate's returned
  tokens plus one bucket for the rest of the vocabulary: the full coefficient when those tokens carry all the mass,
  else an upper bound of it (merging tokens can only raise it), so the top-k logit check is the stricter gate.

No I/O and no model here: ``evaluation.generation`` computes the reference and collects the candidate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

REFERENCE_TOP = (
    64  # reference tokens kept per position: the top-50 slice, and the candidate's tokens for the BC
)
# (atol, rtol) per top-k slice of the reference's tokens; None: the whole vocabulary (vllm-neuron's defaults)
TOLERANCES: dict[int | None, tuple[float, float]] = {
    5: (1e-5, 0.011),
    50: (1e-5, 0.02),
    1000: (1e-5, 0.03),
    None: (1e-5, 0.05),
}
DIVERGENCE_TOL = 0.001  # NxD Inference's divergence_difference_tol
BHATTACHARYYA_MIN = 0.99  # vllm-neuron's agg_bc_threshold
TOKEN_ID = "token_id:"  # vLLM's key for a token when the request asks return_tokens_as_token_ids


def teacher_request(ids: Sequence[int], top: int) -> dict:
    """The completions request that reads the candidate's top-``top`` log-probabilities at every position of
    ``ids`` (prompt + the reference's continuation): vLLM's prompt logprobs, token ids as keys."""
    return {
        "prompt": list(ids),
        "max_tokens": 1,
        "temperature": 0,
        "echo": True,
        "logprobs": top,
        "return_tokens_as_token_ids": True,
    }


def candidate_positions(answer: dict, start: int, count: int) -> list[dict[int, float]] | None:
    """The candidate's top log-probabilities (token id -> logprob) at positions ``start .. start + count - 1`` of an
    echo answer, or None when it returned none (or token strings that are not ids)."""
    choice = (answer.get("choices") or [{}])[0]
    top = (choice.get("logprobs") or {}).get("top_logprobs")
    if not top or len(top) < start + count:
        return None
    out = []
    for entry in top[start : start + count]:
        if not entry:
            return None
        ids = {}
        for key, value in entry.items():
            if not str(key).startswith(TOKEN_ID):
                return None
            ids[int(str(key)[len(TOKEN_ID) :])] = float(value)
        out.append(ids)
    return out


@dataclass
class Position:
    """One compared position: where, the two top tokens, and what failed (empty: it matched)."""

    prompt: int
    index: int
    reference_token: int
    reference_logprob: float
    candidate_token: int
    candidate_logprob: float
    bhattacharyya: float
    failed: str = ""


@dataclass
class Matching:
    """The comparison over every prompt and position."""

    positions: list[Position] = field(default_factory=list)
    returned: int = 0  # log-probabilities per position the candidate returned (the fewest seen)
    checked: list[str] = field(default_factory=list)  # top-k slices checked: "top-5"
    unchecked: list[str] = field(default_factory=list)  # and those the container's answers could not check

    @property
    def share(self) -> float | None:
        """Share of positions within every checked tolerance and without an untolerated divergence."""
        return sum(not p.failed for p in self.positions) / len(self.positions) if self.positions else None

    @property
    def bhattacharyya(self) -> float | None:
        return sum(p.bhattacharyya for p in self.positions) / len(self.positions) if self.positions else None

    @property
    def first_failure(self) -> Position | None:
        return next((p for p in self.positions if p.failed), None)


def compare(
    reference: Sequence[Sequence[dict]],
    candidate: Sequence[Sequence[dict[int, float]]],
    *,
    returned: int,
    tolerances: dict[int | None, tuple[float, float]] | None = None,
    divergence_tol: float = DIVERGENCE_TOL,
) -> Matching:
    """Compare per prompt and position: ``reference[p][i]`` is ``{"ids", "logits", "logprobs"}`` (the reference's top
    tokens, best first), ``candidate[p][i]`` the candidate's token id -> logprob; ``returned`` is how many
    log-probabilities per position the candidate was asked for and gave."""
    tolerances = TOLERANCES if tolerances is None else tolerances
    kept = min((len(r["ids"]) for prompt in reference for r in prompt), default=0)
    slices = [k for k in tolerances if k is not None and k <= min(returned, kept)]
    m = Matching(returned=returned, checked=[f"top-{k}" for k in slices])
    m.unchecked = ["all" if k is None else f"top-{k}" for k in tolerances if k not in slices]
    for p, (ref_prompt, cand_prompt) in enumerate(zip(reference, candidate, strict=True)):
        for i, (ref, cand) in enumerate(zip(ref_prompt, cand_prompt, strict=True)):
            m.positions.append(_position(p, i, ref, cand, slices, tolerances, divergence_tol))
    return m


def _position(
    p: int,
    i: int,
    ref: dict,
    cand: dict[int, float],
    slices: list[int],
    tolerances: dict[int | None, tuple[float, float]],
    divergence_tol: float,
) -> Position:
    ids, logits, logprobs = ref["ids"], ref["logits"], ref["logprobs"]
    top = max(cand, key=lambda t: cand[t])
    ref_logprob = dict(zip(ids, logprobs, strict=True))
    # Bhattacharyya over the candidate's returned tokens and one bucket for the rest of the vocabulary on each side
    ref_p = {t: math.exp(ref_logprob[t]) if t in ref_logprob else 0.0 for t in cand}
    cand_p = {t: math.exp(lp) for t, lp in cand.items()}
    rest = math.sqrt(max(0.0, 1 - sum(ref_p.values())) * max(0.0, 1 - sum(cand_p.values())))
    bc = min(1.0, sum(math.sqrt(ref_p[t] * cand_p[t]) for t in cand) + rest)
    position = Position(p, i, ids[0], logprobs[0], top, cand[top], round(bc, 8))
    if top != ids[0]:
        gap = logits[0] - logits[ids.index(top)] if top in ids else math.inf
        if gap > divergence_tol:
            position.failed = (
                f"greedy divergence: the reference's logits of the two tokens differ by {gap:.4g} "
                f"(> {divergence_tol:g}, not a near tie)"
            )
            return position
    if ids[0] not in cand:
        position.failed = "the reference's top token is not among the candidate's top log-probabilities"
        return position
    anchor = logits[0] - cand[ids[0]]  # the candidate's log-probabilities as logits: the same top-token logit
    for k in slices:
        atol, rtol = tolerances[k]
        for j in range(k):
            token, expected = ids[j], logits[j]
            if token not in cand:
                position.failed = (
                    f"top-{k}: reference token {token} (rank {j + 1}) is outside the candidate's top"
                )
                return position
            if abs(cand[token] + anchor - expected) > atol + rtol * abs(expected):
                position.failed = (
                    f"top-{k}: token {token} (rank {j + 1}) logit {cand[token] + anchor:.5g} vs reference "
                    f"{expected:.5g}, beyond atol {atol:g} + rtol {rtol:g}"
                )
                return position
    return position
