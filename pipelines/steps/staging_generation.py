"""Staging evaluation of the text-generation pipeline: a short-lived inference component.

Places one copy of the candidate Model (the one CreateModel made, by name) on a staging endpoint of the
target instance type, asks it every evaluation prompt at temperature 0 (and for the prompt's
log-probabilities, and its top log-probabilities teacher-forced on the reference's continuation), deletes the staging endpoint whatever happened, and scores the answers against the
CPU reference. Writes ``evaluation.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import step_common

from smneuron.endpoints.handle import Endpoint
from smneuron.errors import InvocationError
from smneuron.evaluation import generation
from smneuron.evaluation import scoring as evaluation
from smneuron.specs.models import GenerationThresholds


def main() -> None:
    ap = step_common.parser(__doc__)
    ap.add_argument("--model-name", required=True)
    ap.add_argument("--instance-type", required=True)
    ap.add_argument("--execution-id", required=True)
    ap.add_argument("--reference-dir", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--max-new-tokens", type=int, required=True)
    ap.add_argument("--min-prefix-match", type=float, required=True)
    ap.add_argument("--min-first-tokens-match", type=float, required=True)
    ap.add_argument("--first-tokens", type=int, required=True)
    ap.add_argument("--max-perplexity-diff", type=float, required=True)
    ap.add_argument("--top-logprobs", type=int, default=20)
    ap.add_argument("--min-logit-match", type=float, default=1.0)
    ap.add_argument("--divergence-tol", type=float, default=0.001)
    ap.add_argument("--min-bhattacharyya", type=float, default=0.99)
    ap.add_argument("--min-task-exact-match", default="none")  # "none": no task-score floor
    args = ap.parse_args()
    config = step_common.load_config(args.config)
    thresholds = GenerationThresholds(
        max_new_tokens=args.max_new_tokens,
        min_prefix_match=args.min_prefix_match,
        min_first_tokens_match=args.min_first_tokens_match,
        first_tokens=args.first_tokens,
        max_perplexity_diff=args.max_perplexity_diff,
        top_logprobs=args.top_logprobs,
        min_logit_match=args.min_logit_match,
        divergence_tol=args.divergence_tol,
        min_bhattacharyya=args.min_bhattacharyya,
        min_task_exact_match=None
        if args.min_task_exact_match == "none"
        else float(args.min_task_exact_match),
    )
    records = step_common.reference_records(args)
    reference = evaluation.read_outputs(Path(args.reference_dir) / "reference.jsonl")
    with step_common.staging(config, args, kind="component") as name:
        endpoint = Endpoint(name)

        def invoke(request: dict) -> dict | None:
            try:
                return endpoint.invoke(json.dumps(request)).json()
            except InvocationError as e:
                if 400 <= e.status < 500 and request.get("echo"):
                    print(f"[staging] no prompt log-probabilities: {e.message}", flush=True)
                    return None
                raise

        candidate = generation.collect(invoke, records, args.max_new_tokens, reference, args.top_logprobs)
    result = generation.score(
        reference,
        candidate,
        records,
        thresholds,
        tokenizer_dir=f"{args.reference_dir}/{generation.TOKENIZER_DIR}",
    )
    step_common.write_json(
        Path(args.out_dir) / evaluation.EVALUATION_FILE, {**result.to_json(), "candidate": candidate}
    )


if __name__ == "__main__":
    step_common.run(main)
