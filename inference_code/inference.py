"""SageMaker inference entry point for smneuron artifacts (SAGEMAKER_PROGRAM=inference.py).

The PyTorch (Neuron) DLC's toolkit calls model_fn, model_warmup_fn, then input_fn / predict_fn /
output_fn once per request. smneuron's own handler (smneuron_handler.py) calls ``predict_many`` once
per TorchServe batch instead, so many requests share each forward pass. Both use the functions here.
Runs on Python 3.8+ with torch 1.13 or 2.x; never imports smneuron.
"""

import os

import serving_codec
import serving_tasks
from serving_codec import OPENAI_EMBEDDINGS, RequestError, openai_document
from serving_model import LoadedArtifact

DEFAULT_MAX_INPUTS = 1024


def max_inputs():
    try:
        return max(1, int(os.environ.get("SMNEURON_MAX_INPUTS", DEFAULT_MAX_INPUTS)))
    except ValueError:
        return DEFAULT_MAX_INPUTS


def model_fn(model_dir):
    """Load every bucket and the tokenizer (from the artifact, never a hub)."""
    return LoadedArtifact(model_dir)


def model_warmup_fn(model_dir, model):
    """Run each bucket once so the endpoint is fast from its first request."""
    model.warm_up()


def input_fn(body, content_type):
    """Decode a request body; raises RequestError (4xx) for anything malformed."""
    return serving_codec.decode(body, content_type, max_inputs())


def predict_fn(data, model):
    """Predict one request; raises RequestError when the request cannot be served."""
    (result,) = predict_many([data], model)
    if isinstance(result, RequestError):
        raise result
    return result


def output_fn(prediction, accept):
    """Encode results; returns (body, content_type) as the toolkit accepts."""
    results, task = prediction
    return serving_codec.encode(results, accept, task)


def predict_many(requests, model):
    """Predict many decoded requests with one tokenizer call and as few forward passes as possible.

    Returns one entry per request: ``(results, task)`` or a ``RequestError`` for that request only.
    """
    outcomes = [None] * len(requests)
    flat = []  # (request index, input)
    for r, request in enumerate(requests):
        try:
            if request.openai is not None and model.task != "feature-extraction":
                raise RequestError(
                    400,
                    "not_embeddings",
                    'This endpoint serves %s; the OpenAI embeddings shape ({"input": ...}) is for '
                    'feature-extraction endpoints. Send {"inputs": ...} instead.' % model.task,
                )
            serving_tasks.check_inputs(model.task, request)
        except RequestError as e:
            outcomes[r] = e
            continue
        flat.extend((r, x) for x in request.inputs)
    if flat:
        encodings = model.tokenize([x for _, x in flat], truncate_second=model.task == "question-answering")
        by_request = {}  # request index -> positions in flat
        for i, (r, _) in enumerate(flat):
            by_request.setdefault(r, []).append(i)
        for r, idx in by_request.items():
            too_long = any(encodings[i].overflowing for i in idx)
            if requests[r].parameters.get("truncation", True) is False and too_long:
                outcomes[r] = RequestError(
                    422,
                    "input_too_long",
                    "An input is longer than the largest compiled bucket (%d tokens) and truncation is false. "
                    "Send shorter inputs, allow truncation, or compile a larger bucket." % model.max_len,
                )
        keep = [i for i, (r, _) in enumerate(flat) if outcomes[r] is None]
        rows = model.forward([encodings[i] for i in keep])
        row_of = dict(zip(keep, rows))
        for r, idx in by_request.items():
            if outcomes[r] is not None:
                continue
            request = requests[r]
            try:
                results = serving_tasks.postprocess(
                    model, request, [encodings[i] for i in idx], [row_of[i] for i in idx]
                )
                if request.openai is not None:
                    counts = [len(encodings[i].ids) for i in idx]
                    outcomes[r] = (openai_document(results, counts, request.openai), OPENAI_EMBEDDINGS)
                elif request.lines is not None:  # JSON Lines: one answer per line, in order
                    outcomes[r] = (serving_codec.per_line(results, request.lines), model.task)
                else:
                    outcomes[r] = (results, model.task)
            except RequestError as e:
                outcomes[r] = e
    model.stats["requests"] += len(requests)
    return outcomes
