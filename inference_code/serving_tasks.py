"""Turn raw output rows into the response shapes Hugging Face pipeline users know.

- text-classification: {"label", "score"} per input (a list of them with top_k / return_all_scores)
- feature-extraction: one vector per input
- token-classification: a list of entities per input
- question-answering: {"answer", "score", "start", "end"} per input
"""

import math

from serving_codec import RequestError


def check_inputs(task, request):
    """Task-specific request checks (raise RequestError)."""
    params = request.parameters
    if task == "question-answering":
        if any(not isinstance(x, tuple) for x in request.inputs):
            raise RequestError(
                400,
                "bad_inputs",
                "Question answering needs [question, context] pairs "
                '(or {"question": ..., "context": ...}) as inputs.',
            )
    if "aggregation_strategy" in params and params["aggregation_strategy"] not in ("none", "simple"):
        raise RequestError(400, "bad_parameter", "aggregation_strategy must be 'none' or 'simple'.")
    if "function_to_apply" in params and params["function_to_apply"] not in ("softmax", "sigmoid", "none"):
        raise RequestError(400, "bad_parameter", "function_to_apply must be 'softmax', 'sigmoid' or 'none'.")
    top_k = params.get("top_k")
    if top_k is not None and top_k < 1:
        raise RequestError(400, "bad_parameter", "top_k must be at least 1.")
    if params.get("max_answer_len", 1) < 1:
        raise RequestError(400, "bad_parameter", "max_answer_len must be at least 1.")


def postprocess(model, request, encodings, rows):
    task = model.task
    if task == "text-classification":
        return [_classify(model, request.parameters, row) for row in rows]
    if task == "feature-extraction":
        normalize = request.parameters.get("normalize", bool(model.manifest.get("normalize")))
        return [_embed(row, normalize) for row in rows]
    if task == "token-classification":
        return [
            _entities(model, request.parameters, text, enc, row)
            for text, enc, row in zip(request.inputs, encodings, rows)
        ]
    return [
        _answer(request.parameters, pair, enc, row) for pair, enc, row in zip(request.inputs, encodings, rows)
    ]


def _scores(row, function):
    torch_row = row.double()
    if function == "sigmoid":
        return torch_row.sigmoid().tolist()
    if function == "none":
        return torch_row.tolist()
    return torch_row.softmax(-1).tolist()


def _classify(model, params, row):
    default = "sigmoid" if model.manifest.get("problem_type") == "multi_label_classification" else "softmax"
    scores = _scores(row, params.get("function_to_apply", default))
    ranked = sorted(
        ({"label": model.labels.get(str(i), "LABEL_%d" % i), "score": s} for i, s in enumerate(scores)),
        key=lambda r: -r["score"],
    )
    if params.get("return_all_scores"):
        return ranked
    top_k = params.get("top_k", 1)
    if top_k is None:
        return ranked
    return ranked[0] if top_k == 1 and "top_k" not in params else ranked[:top_k]


def _embed(row, normalize):
    if normalize:
        norm = float(row.double().norm())
        row = row / max(norm, 1e-12)
    return row.tolist()


def _entities(model, params, text, enc, row):
    probs = row.double().softmax(-1)
    entities = []
    for index, (special, (start, end)) in enumerate(zip(enc.special_tokens_mask, enc.offsets)):
        if special or index >= probs.shape[0]:
            continue
        score, label_id = probs[index].max(-1)
        label = model.labels.get(str(int(label_id)), "LABEL_%d" % int(label_id))
        if label == "O":
            continue
        entities.append(
            {
                "entity": label,
                "score": float(score),
                "index": index,
                "word": enc.tokens[index],
                "start": start,
                "end": end,
            }
        )
    if params.get("aggregation_strategy", "none") == "simple":
        return _group(entities, text)
    return entities


def _group(entities, text):
    groups = []
    for e in entities:
        kind = e["entity"].split("-", 1)[-1]
        continues = (
            groups
            and e["entity"].startswith("I-")
            and groups[-1]["entity_group"] == kind
            and e["index"] == groups[-1]["_last"] + 1
        )
        if continues:
            g = groups[-1]
            g["_scores"].append(e["score"])
            g["end"], g["_last"] = e["end"], e["index"]
        else:
            groups.append(
                {
                    "entity_group": kind,
                    "_scores": [e["score"]],
                    "start": e["start"],
                    "end": e["end"],
                    "_last": e["index"],
                }
            )
    return [
        {
            "entity_group": g["entity_group"],
            "score": sum(g["_scores"]) / len(g["_scores"]),
            "word": text[g["start"] : g["end"]],
            "start": g["start"],
            "end": g["end"],
        }
        for g in groups
    ]


def _answer(params, pair, enc, row):
    max_len = params.get("max_answer_len", 15)
    context_tokens = [i for i, s in enumerate(enc.sequence_ids) if s == 1 and i < row.shape[0]]
    if not context_tokens:
        return {"answer": "", "score": 0.0, "start": 0, "end": 0}
    start_logits, end_logits = row[:, 0].double(), row[:, 1].double()
    allowed = set(context_tokens)
    masked = [i for i in range(row.shape[0]) if i not in allowed]
    if masked:
        start_logits = start_logits.clone()
        end_logits = end_logits.clone()
        start_logits[masked] = -1e4
        end_logits[masked] = -1e4
    p_start = start_logits.softmax(-1).tolist()
    p_end = end_logits.softmax(-1).tolist()
    best, best_score = (context_tokens[0], context_tokens[0]), -math.inf
    for s in context_tokens:
        for e in context_tokens:
            if s <= e < s + max_len:
                score = p_start[s] * p_end[e]
                if score > best_score:
                    best, best_score = (s, e), score
    start, end = enc.offsets[best[0]][0], enc.offsets[best[1]][1]
    return {"answer": pair[1][start:end], "score": best_score, "start": start, "end": end}
