"""Request decoding and response encoding for the SageMaker hosting contract.

Runs inside the DLC (Python 3.8+) and the local endpoint; imports nothing from smneuron. Everything a
client can send wrong becomes a ``RequestError`` with an HTTP status and a short code, never a crash.
"""

import io
import json
import sys

try:  # inside the DLC the toolkit maps this base class's status_code onto the HTTP response
    from sagemaker_inference.errors import BaseInferenceToolkitError as _ErrorBase
except ImportError:  # local endpoint, tests
    _ErrorBase = Exception

JSON = "application/json"
JSONLINES = "application/jsonlines"
TEXT = "text/plain"
NPY = "application/x-npy"
CONTENT_TYPES = (JSON, JSONLINES, TEXT)
ACCEPTS = (JSON, JSONLINES, NPY)

PARAMETERS = {
    "top_k": (int, type(None)),
    "return_all_scores": (bool,),
    "function_to_apply": (str,),
    "truncation": (bool,),
    "normalize": (bool,),
    "aggregation_strategy": (str,),
    "max_answer_len": (int,),
}


class RequestError(_ErrorBase):
    """A client error: ``status`` (4xx), a machine-readable ``code`` and a message for humans."""

    def __init__(self, status, code, message):
        self.status = status
        self.code = code
        self.message = message
        if _ErrorBase is Exception:
            Exception.__init__(self, message)
        else:
            _ErrorBase.__init__(self, status, message, code)

    def body(self):
        return json.dumps({"error": self.message, "code": self.code})

    def __str__(self):
        return self.message


OPENAI_EMBEDDINGS = "openai-embeddings"  # the "task" of an answer in OpenAI's embeddings shape


def openai_document(vectors, token_counts, meta):
    """The /v1/embeddings answer: one entry per input, in order, with usage counted in the model's tokens."""
    data = []
    for i, vec in enumerate(vectors):
        if meta["encoding_format"] == "base64":
            import array
            import base64

            packed = array.array("f", [float(v) for v in vec])
            if sys.byteorder != "little":
                packed.byteswap()
            vec = base64.b64encode(packed.tobytes()).decode("ascii")
        data.append({"object": "embedding", "index": i, "embedding": vec})
    tokens = int(sum(token_counts))
    return {
        "object": "list",
        "data": data,
        "model": meta["model"],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


class Request(object):
    """A decoded request: a list of inputs (str, or (str, str) pairs) and its parameters."""

    __slots__ = ("inputs", "parameters", "openai", "lines")

    def __init__(self, inputs, parameters, openai=None, lines=None):
        self.inputs = inputs
        self.parameters = parameters
        self.openai = openai  # an OpenAI embeddings request: {"model": ..., "encoding_format": ...}
        # a JSON Lines request (Batch Transform's SplitType=Line, BatchStrategy=MultiRecord): per line, how many
        # inputs it holds and whether it held one (a text) or a list; each line is answered by one line, in order
        self.lines = lines


def media_type(header):
    """'application/json; charset=utf-8' -> 'application/json' (lower case)."""
    return (header or "").split(";")[0].strip().lower()


def decode(body, content_type, max_inputs):
    """Turn a request body into a ``Request``.

    Raises:
        RequestError: unsupported content type (415), bad encoding or JSON (400), wrong shapes or
            types (400), no inputs (400), too many inputs (413), unknown parameters (400).
    """
    ctype = media_type(content_type) or JSON
    if ctype not in CONTENT_TYPES:
        raise RequestError(
            415,
            "unsupported_content_type",
            "Content type %r is not supported; use one of %s." % (ctype, ", ".join(CONTENT_TYPES)),
        )
    if isinstance(body, (bytes, bytearray)):
        try:
            # "utf-8-sig": a body that begins with a byte-order mark (a file Windows' Notepad saved, sent whole, or the
            # first record of a Batch Transform input) is read without it, as RFC 8259 section 8.1 lets a parser do
            body = bytes(body).decode("utf-8-sig")
        except UnicodeDecodeError:
            raise RequestError(400, "bad_encoding", "The request body is not valid UTF-8.")
    if not isinstance(body, str):
        raise RequestError(400, "bad_body", "The request body must be text.")
    body = body[1:] if body.startswith("\ufeff") else body

    parameters, openai, lines = {}, [], None
    if ctype == TEXT:
        inputs = [body]
    elif ctype == JSON:
        inputs, parameters, *openai = _from_document(_parse_json(body))
    else:
        inputs, parameters, lines = _from_lines(body)
    if not inputs:
        raise RequestError(400, "empty_inputs", "The request has no inputs.")
    if len(inputs) > max_inputs:
        raise RequestError(
            413,
            "too_many_inputs",
            "The request has %d inputs; the limit is %d (split it, or raise SMNEURON_MAX_INPUTS)."
            % (len(inputs), max_inputs),
        )
    return Request(inputs, _check_parameters(parameters), openai[0] if openai else None, lines)


def _from_lines(body):
    """A JSON Lines body: a document per line (``"text"``, ``{"inputs": ...}``), blank lines skipped. Every line
    takes the first line's parameters (a line with others is refused: one request runs with one set).

    Raises:
        RequestError: naming the line that is not valid JSON, not an input, or has other parameters.
    """
    inputs, lines, parameters = [], [], None
    for n, line in enumerate(body.splitlines(), 1):
        if not line.strip():
            continue
        doc = _parse_json(line, "line %d: " % n)
        try:
            more, given = _from_document(doc)
        except RequestError as e:
            raise RequestError(e.status, e.code, "line %d: %s" % (n, e.message))
        if parameters is None:
            parameters = given
        elif given != parameters:
            raise RequestError(
                400,
                "mixed_parameters",
                "line %d: its parameters differ from the first line's; a JSON Lines request runs with one set "
                "(send lines with other parameters in another request)." % n,
            )
        inner = doc.get("inputs") if isinstance(doc, dict) and "inputs" in doc else doc
        lines.append((len(more), not isinstance(inner, list)))
        inputs.extend(more)
    return inputs, parameters or {}, lines


def per_line(results, lines):
    """A JSON Lines request's results, one per line, in order: a line that held one input gets its result, a line
    that held a list gets the list of theirs."""
    out, i = [], 0
    for count, single in lines:
        out.append(results[i] if single else results[i : i + count])
        i += count
    return out


def _parse_json(text, where=""):
    try:
        return json.loads(text)
    except ValueError as e:
        raise RequestError(400, "bad_json", "%sthe body is not valid JSON: %s" % (where, e))
    except RecursionError:  # e.g. 20,000 nested brackets: the client's mistake, not the model's
        raise RequestError(
            400, "bad_json", "%sthe JSON is nested too deeply; send inputs as a flat list" % where
        )


def _from_document(doc):
    parameters = {}
    if isinstance(doc, dict) and "input" in doc and "inputs" not in doc:
        return _openai_embeddings(doc)
    if isinstance(doc, dict) and ("inputs" in doc or "parameters" in doc):
        unknown = sorted(set(doc) - {"inputs", "parameters"})
        if unknown:
            raise RequestError(
                400,
                "unknown_field",
                'Unknown field(s) %s; send {"inputs": ..., "parameters": {...}}.' % ", ".join(unknown),
            )
        parameters = doc.get("parameters") or {}
        if not isinstance(parameters, dict):
            raise RequestError(400, "bad_parameters", '"parameters" must be an object.')
        doc = doc.get("inputs")
    if isinstance(doc, (str, dict)):
        doc = [doc]
    if not isinstance(doc, list):
        raise RequestError(
            400,
            "bad_inputs",
            '"inputs" must be a string, a list of strings, or a list of [text, text_pair] pairs.',
        )
    return [_one_input(x) for x in doc], parameters


OPENAI_FIELDS = {"input", "model", "encoding_format", "user", "dimensions"}


def _openai_embeddings(doc):
    """``{"input": ..., "model": ...}`` as OpenAI's /v1/embeddings takes it (what GuideLLM, AIPerf and SageMaker's AI
    benchmark jobs send): text inputs, float or base64 answers."""
    unknown = sorted(set(doc) - OPENAI_FIELDS)
    if unknown:
        raise RequestError(
            400, "unknown_field", "Unknown field(s) %s of an embeddings request." % ", ".join(unknown)
        )
    if doc.get("dimensions") is not None:
        raise RequestError(
            400, "unsupported_dimensions", '"dimensions" is not supported: the model answers its own size.'
        )
    fmt = doc.get("encoding_format") or "float"
    if fmt not in ("float", "base64"):
        raise RequestError(400, "bad_encoding_format", '"encoding_format" must be "float" or "base64".')
    texts = doc["input"]
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise RequestError(
            400,
            "bad_input",
            '"input" must be a string or a list of strings (token arrays are not supported: send text).',
        )
    return texts, {}, {"model": doc.get("model") or "", "encoding_format": fmt}


def _one_input(x):
    if isinstance(x, str):
        return x
    if isinstance(x, dict) and set(x) == {"question", "context"}:
        x = [x["question"], x["context"]]
    if isinstance(x, dict) and set(x) == {"text", "text_pair"}:
        x = [x["text"], x["text_pair"]]
    if isinstance(x, list) and len(x) == 2 and all(isinstance(s, str) for s in x):
        return (x[0], x[1])
    raise RequestError(
        400,
        "bad_inputs",
        "Each input must be a string or a [text, text_pair] pair of strings, got %s." % _describe(x),
    )


def _describe(x):
    text = json.dumps(x)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_parameters(parameters):
    for key, value in parameters.items():
        types = PARAMETERS.get(key)
        if types is None:
            raise RequestError(
                400,
                "unknown_parameter",
                "Unknown parameter %r; known: %s." % (key, ", ".join(sorted(PARAMETERS))),
            )
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            raise RequestError(
                400, "bad_parameter", "Parameter %r has the wrong type (%s)." % (key, _describe(value))
            )
    return parameters


def encode(results, accept, task):
    """Serialise per-input results; returns (body, content_type).

    Raises:
        RequestError: unsupported accept type (406), or npy for a task that has no arrays (406).
    """
    kind = media_type(accept)
    if kind in ("", "*/*"):
        kind = JSON
    if task == OPENAI_EMBEDDINGS:  # one OpenAI document, not a list of per-input results
        if kind != JSON:
            raise RequestError(406, "unsupported_accept", "An embeddings request is answered in JSON only.")
        return json.dumps(results), JSON
    if kind == JSON:
        return json.dumps(results), JSON
    if kind == JSONLINES:
        return "".join(json.dumps(r) + "\n" for r in results), JSONLINES
    if kind == NPY:
        if task != "feature-extraction":
            raise RequestError(
                406, "unsupported_accept", "application/x-npy is only available for embeddings."
            )
        import numpy as np

        buf = io.BytesIO()
        np.save(buf, np.asarray(results, dtype=np.float32))
        return buf.getvalue(), NPY
    raise RequestError(
        406, "unsupported_accept", "Accept %r is not supported; use one of %s." % (kind, ", ".join(ACCEPTS))
    )
