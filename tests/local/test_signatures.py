"""Issue 60 #4: signatures without holes. S3's signed streaming uploads have every chunk's signature (and the trailer's)
checked, held against AWS's own published example and against seeds signed by botocore; UNSIGNED-PAYLOAD is S3's
alone; a request from the future gets AWS's "not yet current"; a body that stops arriving ends with RequestTimeout."""

from __future__ import annotations

import base64
import calendar
import datetime
import hashlib
import hmac
import http.client
import json
import socket
import urllib.parse
import zlib
from unittest import mock

import pytest
from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from smneuron.files.local_record import LOCAL_REGION, embedded_keys
from smneuron.local.aws.auth import aws_chunked
from smneuron.local.aws.auth.sigv4 import Refused, identify, verify
from smneuron.local.aws.engine.embedded import embedded_aws
from smneuron.local.aws.http import connections
from smneuron.local.aws.http.bodies import Body, BodyError, spooled
from smneuron.session import Session

# AWS's example of a signed streaming PUT (S3 API reference, "Signature Calculations for the Authorization Header:
# Transferring Payload in Multiple Chunks", Example: PUT Object): its keys, request and every signature
EXAMPLE_KEYS = {"AKIAIOSFODNN7EXAMPLE": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}
EXAMPLE_NOW = calendar.timegm((2013, 5, 24, 0, 0, 0))
SEED = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
CHUNKS = [
    (65536, "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"),
    (1024, "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"),
    (0, "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"),
]


def _example_environ() -> dict:
    signed = "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class"
    return {
        "REQUEST_METHOD": "PUT",
        "PATH_INFO": "/examplebucket/chunkObject.txt",
        "RAW_URI": "/examplebucket/chunkObject.txt",
        "QUERY_STRING": "",
        "HTTP_HOST": "s3.amazonaws.com",
        "HTTP_X_AMZ_DATE": "20130524T000000Z",
        "HTTP_X_AMZ_STORAGE_CLASS": "REDUCED_REDUNDANCY",
        "HTTP_X_AMZ_CONTENT_SHA256": aws_chunked.SIGNED,
        "HTTP_CONTENT_ENCODING": "aws-chunked",
        "HTTP_X_AMZ_DECODED_CONTENT_LENGTH": "66560",
        "CONTENT_LENGTH": "66824",
        "HTTP_AUTHORIZATION": "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        f"SignedHeaders={signed},Signature={SEED}",
    }


def _example_body(change: str = "") -> Body:
    wire = bytearray()
    for size, signature in CHUNKS:
        data = bytearray(b"a" * size)
        if change == "byte" and size == 1024:
            data[10:11] = b"b"
        if change == "drop" and size == 65536:
            continue
        wire += f"{size:x};chunk-signature={signature}\r\n".encode() + data + b"\r\n"
    file = spooled()
    file.write(bytes(wire))
    file.seek(0)
    return Body(file, len(wire), hashlib.sha256(bytes(wire)).hexdigest())


def test_awss_published_streaming_example_verifies_and_decodes():
    environ = _example_environ()
    claim = identify(environ, EXAMPLE_KEYS, now=EXAMPLE_NOW)
    verify(
        environ, None, EXAMPLE_KEYS, now=EXAMPLE_NOW, claim=claim
    )  # the seed: botocore's canonical request
    decoded = aws_chunked.decode(_example_body(), aws_chunked.SIGNED, claim, "66560")
    assert decoded.body.data() == b"a" * 66560 and decoded.trailers == {}


@pytest.mark.parametrize("change", ["byte", "drop"])
def test_a_changed_or_dropped_chunk_is_refused(change):
    environ = _example_environ()
    claim = identify(environ, EXAMPLE_KEYS, now=EXAMPLE_NOW)
    with pytest.raises(Refused) as refused:
        aws_chunked.decode(_example_body(change), aws_chunked.SIGNED, claim, "66560")
    assert refused.value.code == "SignatureDoesNotMatch"


def test_a_wrong_decoded_length_is_refused():
    claim = identify(_example_environ(), EXAMPLE_KEYS, now=EXAMPLE_NOW)
    with pytest.raises(BodyError, match="x-amz-decoded-content-length says 99999"):
        aws_chunked.decode(_example_body(), aws_chunked.SIGNED, claim, "99999")


# ---------------------------------------------------------------- against the embedded S3, seeds signed by botocore


@pytest.fixture(scope="module")
def service():
    with embedded_aws() as url:
        Session.embedded(url).client("s3").create_bucket(Bucket="sig-test")
        yield url


def _sign(signing_key: bytes, text: str) -> str:
    return hmac.new(signing_key, text.encode(), hashlib.sha256).hexdigest()


def _streaming_put(url: str, key: str, payload: bytes, form: str, *, bad: str = "") -> tuple[int, bytes]:
    """A chunked PUT in ``form``: the seed signed by botocore (SigV4Auth over the headers; S3SigV4Auth for the
    unsigned trailer form, which it sets itself), the chunks and trailer as AWS documents them."""
    keys = embedded_keys(url)
    credentials = Credentials(keys.access_key, keys.secret_key)
    trailer = form != aws_chunked.SIGNED
    chunks = [payload[:9000], payload[9000:], b""]
    checksum = base64.b64encode((zlib.crc32(payload) & 0xFFFFFFFF).to_bytes(4, "big")).decode()
    if bad == "checksum":
        checksum = "AAAAAA=="
    headers = {"Content-Encoding": "aws-chunked", "X-Amz-Decoded-Content-Length": str(len(payload))}
    if trailer:
        headers["X-Amz-Trailer"] = "x-amz-checksum-crc32"
    request = AWSRequest("PUT", f"{url}/sig-test/{key}", headers=headers)
    if form == aws_chunked.UNSIGNED_TRAILER:
        request.context["checksum"] = {"request_algorithm": {"in": "trailer", "algorithm": "crc32"}}
        S3SigV4Auth(credentials, "s3", LOCAL_REGION).add_auth(request)
    else:
        request.headers["X-Amz-Content-SHA256"] = form
        SigV4Auth(credentials, "s3", LOCAL_REGION).add_auth(request)
    assert request.headers["X-Amz-Content-SHA256"] == form
    seed = request.headers["Authorization"].rsplit("Signature=", 1)[1]
    stamp = request.headers["X-Amz-Date"]
    scope = f"{stamp[:8]}/{LOCAL_REGION}/s3/aws4_request"
    k = f"AWS4{keys.secret_key}".encode()
    for part in (stamp[:8], LOCAL_REGION, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    wire, previous = bytearray(), seed
    for i, chunk in enumerate(chunks):
        if form == aws_chunked.UNSIGNED_TRAILER:
            wire += f"{len(chunk):x}\r\n".encode()
        else:
            empty = hashlib.sha256(b"").hexdigest()
            text = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", stamp, scope, previous, empty,
                              hashlib.sha256(chunk).hexdigest()])  # fmt: skip
            previous = _sign(k, text)
            signature = "0" * 64 if bad == "chunk" and i == 1 else previous
            wire += f"{len(chunk):x};chunk-signature={signature}\r\n".encode()
        wire += chunk + b"\r\n"
    if trailer:
        canonical = f"x-amz-checksum-crc32:{checksum}\n"
        wire += canonical.replace("\n", "\r\n").encode()
        if form == aws_chunked.SIGNED_TRAILER:
            text = "\n".join(["AWS4-HMAC-SHA256-TRAILER", stamp, scope, previous,
                              hashlib.sha256(canonical.encode()).hexdigest()])  # fmt: skip
            signature = "1" * 64 if bad == "trailer" else _sign(k, text)
            wire += f"x-amz-trailer-signature:{signature}\r\n".encode()
    wire += b"\r\n"
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    sent = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
    conn.request(
        "PUT", f"/sig-test/{key}", body=bytes(wire), headers={**sent, "Content-Length": str(len(wire))}
    )
    answer = conn.getresponse()
    out = answer.status, answer.read()
    conn.close()
    return out


def _stored(url: str, key: str) -> bytes | None:
    s3 = Session.embedded(url).client("s3")
    try:
        return s3.get_object(Bucket="sig-test", Key=key)["Body"].read()
    except s3.exceptions.NoSuchKey:
        return None


@pytest.mark.parametrize("form", aws_chunked.FORMS)
def test_each_streaming_form_stores_the_object_it_carried(service, form):
    payload = bytes(range(256)) * 60  # 15,360 bytes in two chunks
    status, body = _streaming_put(service, form, payload, form)
    assert status == 200, body
    assert _stored(service, form) == payload


@pytest.mark.parametrize(
    ("form", "bad", "status", "code"),
    [
        (aws_chunked.SIGNED, "chunk", 403, b"SignatureDoesNotMatch"),
        (aws_chunked.SIGNED_TRAILER, "trailer", 403, b"SignatureDoesNotMatch"),
        (aws_chunked.SIGNED_TRAILER, "checksum", 400, b"BadDigest"),
        (aws_chunked.UNSIGNED_TRAILER, "checksum", 400, b"BadDigest"),
    ],
)
def test_a_bad_chunk_trailer_or_checksum_stores_nothing(service, form, bad, status, code):
    key = f"bad-{bad}-{form}"
    answer = _streaming_put(service, key, b"z" * 12000, form, bad=bad)
    assert answer[0] == status and code in answer[1], answer
    assert _stored(service, key) is None


def _sagemaker_call(
    url: str, when: datetime.datetime | None = None, content_sha: str | None = None
) -> AWSRequest:
    keys = embedded_keys(url)
    request = AWSRequest("POST", url + "/", data=b"{}", headers={
        "X-Amz-Target": "SageMaker.ListModels", "Content-Type": "application/x-amz-json-1.1"})  # fmt: skip
    if content_sha:
        request.headers["X-Amz-Content-SHA256"] = content_sha
    signer = SigV4Auth(Credentials(keys.access_key, keys.secret_key), "sagemaker", LOCAL_REGION)
    with mock.patch("botocore.auth.get_current_datetime", return_value=when or datetime.datetime.utcnow()):
        signer.add_auth(request)
    return request


def _send(url: str, request: AWSRequest, body: bytes | None = None) -> tuple[int, dict]:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("POST", "/", body=request.body if body is None else body,
                 headers={"Host": parts.netloc, **request.headers})  # fmt: skip
    answer = conn.getresponse()
    out = answer.status, json.loads(answer.read() or b"{}")
    conn.close()
    return out


def test_unsigned_payload_is_s3s_alone(service):
    request = _sagemaker_call(service, content_sha="UNSIGNED-PAYLOAD")
    status, doc = _send(service, request, b'{"NameContains": "changed after signing"}')
    assert status == 403 and doc["__type"] == "InvalidSignatureException"
    assert "accepted by Amazon S3 only" in doc["message"]


def test_a_request_from_the_future_is_not_yet_current(service):
    ahead = datetime.datetime.utcnow() + datetime.timedelta(minutes=6)
    status, doc = _send(service, _sagemaker_call(service, ahead))
    assert status == 403 and doc["message"].startswith("Signature not yet current: ")
    assert "+ 5 min.)" in doc["message"]
    behind = datetime.datetime.utcnow() - datetime.timedelta(minutes=6)
    status, doc = _send(service, _sagemaker_call(service, behind))
    assert status == 403 and doc["message"].startswith("Signature expired: ")


def test_a_body_that_stops_arriving_ends_with_request_timeout(service, monkeypatch):
    monkeypatch.setattr(connections, "BODY_S", 1.0)  # AWS's period is not published; the service's is 20 s
    request = _sagemaker_call(service)
    parts = urllib.parse.urlsplit(service)
    head = "POST / HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in {
        "Host": parts.netloc, **request.headers, "Content-Length": "100"}.items()) + "\r\n"  # fmt: skip
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as s:
        s.sendall(head.encode() + b"{}")  # 2 of the 100 bytes, then nothing
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    # answered (the idle limit would have closed it without a word): the body's own timeout ended it
    assert answer.startswith(b"HTTP/1.1 400") and b"RequestTimeout" in answer, answer[:300]


@pytest.mark.parametrize(
    ("headers", "why"),
    [({"Origin": "http://evil.example"}, "Origin"), ({"Host": "rebind.example"}, "Host"), ({}, "bearer")],
)
def test_every_refusal_on_the_openai_path_is_in_openais_shape(service, headers, why):
    """Issue 60 #5: a foreign Origin or Host on /openai/v1 was answered in SageMaker's shape; the openai client reads
    OpenAI's (``error.message``, ``error.type``, ``error.code``) and raises with it."""
    import openai

    client = openai.OpenAI(
        base_url=f"{service}/endpoints/ep/openai/v1",
        api_key="not-a-token" if why == "bearer" else "x",
        default_headers=headers,
        max_retries=0,
    )
    with pytest.raises(openai.APIStatusError) as raised:
        client.chat.completions.create(model="", messages=[{"role": "user", "content": "x"}])
    error = raised.value.body
    assert raised.value.status_code in (401, 403) and set(error) >= {"message", "type", "code"}, error
    assert (why in error["message"]) if why != "bearer" else error["type"] == "authentication_error"
