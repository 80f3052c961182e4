"""Taking back a change the embedded AWS made but could not keep on disk, so that what it lists is what it acknowledged.

The service answers a change once a snapshot covering it is on disk (``persistence.Keeper.persist``). When that write
fails after moto applied the change (the disk filled between the check for room and the write), the change is undone
where the request names what it created: the matching delete is called, and the caller gets an error saying nothing
changed. A change of another kind (an update, a delete, an object written over another) cannot be taken back: the
error says it stays in the running service until a snapshot succeeds, and is lost if the service stops first.

``before`` is called before the change is applied (an object's key is looked up then: only a new one can be deleted
again); it returns the undo to run, or None.

May import: smneuron.session (boto3), the standard library.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

# SageMaker's creates and the delete that takes each back, by the name field both share
_SAGEMAKER = {
    "CreateModel": ("delete_model", "ModelName"),
    "CreateEndpointConfig": ("delete_endpoint_config", "EndpointConfigName"),
    "CreateEndpoint": ("delete_endpoint", "EndpointName"),
    "CreateInferenceComponent": ("delete_inference_component", "InferenceComponentName"),
}


def before(session: Any, environ: dict, body: bytes) -> Callable[[], None] | None:
    """The undo of the change ``environ`` asks for, decided before it is applied; None where it cannot be undone."""
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    if target.startswith("SageMaker."):
        return _sagemaker(session, target.split(".", 1)[1], body)
    if environ.get("REQUEST_METHOD") == "PUT" and not target and not environ.get("QUERY_STRING"):
        bucket, _, key = environ.get("PATH_INFO", "").lstrip("/").partition("/")
        return _s3(session, bucket, key)
    if action(environ, body) == "CreateRole":
        name = dict(urllib.parse.parse_qsl(body.decode("utf-8", "replace"))).get("RoleName")
        return (lambda: session.client("iam").delete_role(RoleName=name)) if name else None
    return None


def _sagemaker(session: Any, operation: str, body: bytes) -> Callable[[], None] | None:
    if operation not in _SAGEMAKER:
        return None
    call, field = _SAGEMAKER[operation]
    try:
        name = json.loads(body or b"{}").get(field)
    except ValueError:
        return None
    return (lambda: getattr(session.client("sagemaker"), call)(**{field: name})) if name else None


def _s3(session: Any, bucket: str, key: str) -> Callable[[], None] | None:
    s3 = session.client("s3")
    if not bucket:
        return None
    if not key:  # CreateBucket
        return lambda: s3.delete_bucket(Bucket=bucket)
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return None  # written over an object: the old bytes are gone from moto, nothing to put back
    except ClientError:
        return lambda: s3.delete_object(Bucket=bucket, Key=key)


def action(environ: dict, body: bytes) -> str:
    """The operation a query-protocol request (IAM, STS) names: ``Action=`` in its query or form body."""
    query = dict(urllib.parse.parse_qsl(environ.get("QUERY_STRING", "")))
    if "Action" in query:
        return query["Action"]
    if (
        environ.get("CONTENT_TYPE", "").startswith("application/x-www-form-urlencoded")
        and len(body) < 1 << 20
    ):
        return dict(urllib.parse.parse_qsl(body.decode("utf-8", "replace"))).get("Action", "")
    return ""
