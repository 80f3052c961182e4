from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from smneuron import errors


def client_error(code: str, message: str = "boom", op: str = "CreateEndpoint") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, op)


@pytest.mark.parametrize(
    ("code", "cls", "hint_word"),
    [
        ("AccessDenied", errors.AccessDeniedError, "permission"),
        ("AccessDeniedException", errors.AccessDeniedError, "permission"),
        ("ExpiredToken", errors.ExpiredCredentialsError, "expired"),
        ("ExpiredTokenException", errors.ExpiredCredentialsError, "expired"),
        ("ValidationException", errors.ValidationError, "argument"),
        ("ResourceLimitExceeded", errors.QuotaExceededError, "Service Quotas"),
        ("ThrottlingException", errors.ThrottledError, "throttled"),
        ("ResourceNotFound", errors.NotFoundError, "region"),
        ("ResourceNotFoundException", errors.NotFoundError, "region"),
    ],
)
def test_client_errors_translate_to_typed_errors_with_hints(code, cls, hint_word):
    err = errors.from_client_error(client_error(code, "it failed"))
    assert type(err) is cls
    assert err.code == code
    assert err.operation == "CreateEndpoint"
    assert "it failed" in str(err) and code in str(err)
    assert hint_word in str(err)


def test_unknown_code_is_a_plain_aws_error_and_operation_can_be_overridden():
    err = errors.from_client_error(client_error("SomethingNew"), operation="DescribeEndpoint")
    assert type(err) is errors.AwsError
    assert err.operation == "DescribeEndpoint"


def test_endpoint_failed_error_carries_reason_and_log_lines():
    err = errors.EndpointFailedError(
        "ep", "Failed", "CapacityError: no ml.inf1 capacity", ["line a", "line b"]
    )
    text = str(err)
    assert "CapacityError" in text and "line b" in text and "smneuron delete ep" in text


@pytest.mark.parametrize(
    ("code", "message", "missing"),
    [
        ("ValidationException", 'Could not find endpoint "arn:aws:sagemaker:...:endpoint/ep".', True),
        ("ValidationError", "Endpoint ep of account 123456789012 not found.", True),  # InvokeEndpoint's words
        (
            "ValidationError",
            "Target variant Nope not found for endpoint ep; its variants: AllTraffic.",
            False,
        ),
        ("NoSuchKey", "The specified key does not exist.", True),
        ("ThrottlingException", "Rate exceeded", False),
    ],
)
def test_not_found_is_recognised_in_each_services_words(code, message, missing):
    err = ClientError({"Error": {"Code": code, "Message": message}}, "InvokeEndpoint")
    assert errors.is_not_found(err) is missing


def test_a_value_botocore_refuses_before_sending_is_a_usage_mistake_not_an_unexpected_error():
    from botocore.exceptions import ParamValidationError

    from smneuron.errors import ConfigError, from_exception

    known = from_exception(
        ParamValidationError(report="Invalid value for parameter limit, value: 0, valid min value: 1")
    )
    assert isinstance(known, ConfigError) and known.exit_code == 1
    assert "valid min value: 1" in str(known) and "AWS accepts" in str(known)


def test_a_certificate_aws_ca_bundle_does_not_trust_is_said_with_the_fix(tmp_path, monkeypatch):
    """A TLS endpoint whose certificate the CA bundle does not hold (a proxy that inspects TLS, a private CA): botocore's
    SSLError was "Unexpected error: SSLError"; it is said as the verification it is, with AWS_CA_BUNDLE as the fix.
    A real handshake: a self-signed server on loopback, botocore's own client against it."""
    import boto3
    from self_signed import self_signed_server

    monkeypatch.delenv("AWS_CA_BUNDLE", raising=False)
    with self_signed_server(tmp_path) as url, pytest.raises(Exception) as raised:
        boto3.client("sagemaker", endpoint_url=url).list_endpoints()
    known = errors.from_exception(raised.value)
    assert isinstance(known, errors.AwsError) and known.code == "SSLError", raised.value
    assert f"TLS to {url}/ could not be verified" in str(known) and "CERTIFICATE_VERIFY_FAILED" in str(known)
    assert "AWS_CA_BUNDLE" in known.hint and "proxy" in known.hint
