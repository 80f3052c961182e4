"""TorchServe handler (SAGEMAKER_HANDLER / TS_DEFAULT_SERVICE_HANDLER) with true batching.

The toolkit's default handler calls input_fn/predict_fn/output_fn once per request of a TorchServe
batch, using the first request's headers for all. This one decodes each request with its own
Content-Type and Accept, runs ONE forward pass per bucket for the whole batch (inference.predict_many),
and answers each request on its own: a bad request gets its 4xx, the rest of the batch still succeeds.
The local endpoint calls this same ``handle`` with a TorchServe-like context.
"""

import json
import logging
import os
import sys

logger = logging.getLogger(__name__)

_model = None


def _model_dir(context):
    props = getattr(context, "system_properties", None) or {}
    return props.get("model_dir") or os.environ.get("SM_MODEL_DIR") or "/opt/ml/model"


def initialize(context):
    """Load and warm the model (TorchServe calls handle() first; we initialise lazily there too)."""
    global _model
    model_dir = _model_dir(context)
    gpu = (getattr(context, "system_properties", None) or {}).get("gpu_id")
    if gpu is not None:  # TorchServe's GPU for this worker: the inference code runs a cuda artifact there
        os.environ["SMNEURON_GPU_ID"] = str(gpu)
    code_dir = os.path.join(model_dir, "code")
    if os.path.isdir(code_dir) and code_dir not in sys.path:
        sys.path.insert(0, code_dir)
    import inference

    model = inference.model_fn(model_dir)
    inference.model_warmup_fn(model_dir, model)
    _model = model
    return model


def _headers(context, idx):
    try:
        props = context.request_processor[idx].get_request_properties() or {}
    except (AttributeError, IndexError, TypeError):
        props = {}
    return {str(k).lower(): v for k, v in props.items()}


def _body(row):
    if not isinstance(row, dict):
        return row
    for key in ("body", "data"):
        if row.get(key) is not None:
            return row[key]
    return b""


def _respond(context, idx, status, content_type, batch=None):
    try:
        if batch is not None:  # diagnostics: how many requests shared this forward pass
            context.set_response_header(idx, "X-Smneuron-Batch-Size", str(batch))
    except (AttributeError, TypeError, KeyError):
        pass
    try:
        context.set_response_content_type(idx, content_type)
        if status != 200:
            context.set_response_status(status, "", idx)
    except (AttributeError, TypeError):
        pass


def _internal_error(exc):
    from serving_codec import RequestError

    return RequestError(500, "internal_error", "Inference failed: %s: %s" % (type(exc).__name__, exc))


def handle(data, context):
    """Serve one TorchServe batch; returns one response body per request, in order."""
    import inference
    from serving_codec import RequestError

    model = _model if _model is not None else initialize(context)
    if data is None:
        return None
    decoded, accepts = [], []
    responses = [None] * len(data)
    for idx, row in enumerate(data):
        headers = _headers(context, idx)
        accepts.append(headers.get("accept") or os.environ.get("SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT"))
        try:
            body = _body(row)
            if isinstance(body, (dict, list)):  # TorchServe decoded JSON already (decode_input_request=true)
                body = json.dumps(body)
            decoded.append(inference.input_fn(body, headers.get("content-type")))
        except RequestError as e:
            responses[idx] = e
            decoded.append(None)
    live = [i for i, d in enumerate(decoded) if d is not None]
    try:
        outcomes = inference.predict_many([decoded[i] for i in live], model)
    except RequestError as e:  # e.g. a QA question longer than every bucket: blame the batch's requests
        outcomes = [e] * len(live)
    except Exception as e:  # a model or runtime fault: answer 500, keep the worker alive
        logger.exception("inference failed for a batch of %d requests", len(live))
        outcomes = [_internal_error(e)] * len(live)
    for i, outcome in zip(live, outcomes):
        responses[i] = outcome
    bodies = []
    for idx, outcome in enumerate(responses):
        if not isinstance(outcome, RequestError):
            try:
                body, content_type = inference.output_fn(outcome, accepts[idx])
                _respond(context, idx, 200, content_type, batch=len(data))
                bodies.append(body)
                continue
            except RequestError as e:
                outcome = e
        logger.info("request %d rejected: %s %s", idx, outcome.status, outcome.code)
        _respond(context, idx, outcome.status, "application/json")
        bodies.append(outcome.body())
    return bodies
