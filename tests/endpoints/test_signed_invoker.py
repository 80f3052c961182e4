"""bench's InvokeEndpoint (``endpoints.invoke.SignedInvoker``) answers errors as ``invoke_endpoint`` does: each raw
error answer SageMaker can send, parsed by botocore's own rest-json parser and mapped the way ``invoke_endpoint`` maps
a ClientError, is the same exception, message and code as the signed pool's reading of the same bytes."""

from __future__ import annotations

import json

import botocore.parsers
import botocore.session
import pytest
from botocore.awsrequest import HeadersDict
from botocore.exceptions import ClientError

from smneuron.endpoints.invoke import _error
from smneuron.errors import AwsError, InvocationError, from_client_error

ERRORS = [
    (424, "ModelError:http://internal.amazon.com/coral/com.amazonaws.sagemaker/",
     {"OriginalStatusCode": 400, "OriginalMessage": "bad_inputs", "LogStreamArn": "arn:aws:logs:x",
      "message": 'Received client error (400) from primary with message "bad_inputs".'}),
    (400, "ValidationError:http://internal.amazon.com/coral/com.amazon.coral.validate/",
     {"message": "Endpoint nope of account 123456789012 not found."}),
    (400, "ThrottlingException:", {"message": "Rate exceeded"}),
    (503, "ServiceUnavailable:", {"message": "Service unavailable"}),
    (424, "ModelNotReadyException:", {"message": "Model is not ready: no copies"}),
    (500, "InternalFailure:", {"message": "An internal failure"}),
]  # fmt: skip


def _as_botocore_reads_it(status: int, kind: str, doc: dict) -> Exception:
    """botocore's parse of the answer (the operation's output shape, then the modeled error's fields, as its endpoint
    does), then invoke_endpoint's mapping of the ClientError."""
    model = botocore.session.get_session().get_service_model("sagemaker-runtime")
    parser = botocore.parsers.create_parser(model.protocol)
    # case-insensitive, as urllib3's headers are when botocore parses them
    headers = HeadersDict({"x-amzn-ErrorType": kind, "Content-Type": "application/json"})
    raw = {"status_code": status, "headers": headers, "body": json.dumps(doc).encode()}
    parsed = parser.parse(raw, model.operation_model("InvokeEndpoint").output_shape)
    shape = model.shape_for_error_code(parsed["Error"]["Code"])
    if shape is not None:
        parsed.update(
            {k: v for k, v in parser.parse(raw, shape).items() if k not in ("Error", "ResponseMetadata")}
        )
    if parsed.get("OriginalStatusCode"):
        return InvocationError(int(parsed["OriginalStatusCode"]), parsed["Error"].get("Message", ""))
    return from_client_error(ClientError(parsed, "InvokeEndpoint"), operation="InvokeEndpoint")


@pytest.mark.parametrize(("status", "kind", "doc"), ERRORS, ids=[e[1].split(":")[0] for e in ERRORS])
def test_each_error_answer_is_what_invoke_endpoint_raises(status, kind, doc):
    expected = _as_botocore_reads_it(status, kind, doc)
    got = _error(
        status, {"X-Amzn-ErrorType": kind, "Content-Type": "application/json"}, json.dumps(doc).encode()
    )
    assert type(got) is type(expected) and str(got) == str(expected)
    if isinstance(expected, InvocationError):
        assert (got.status, got.body) == (expected.status, expected.body) == (400, doc["message"])
    else:
        assert isinstance(got, AwsError) and got.code == expected.code
