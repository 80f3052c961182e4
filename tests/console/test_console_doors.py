"""The console's doors without a browser (issue 65): the one-time token, the cookie, Host and Origin, the CSRF token,
and read-only against an account (the embedded SageMaker standing in for one)."""

from __future__ import annotations

import httpx
import pytest

from smneuron.console.server import Console
from smneuron.local.aws.embedded_service import EmbeddedService
from smneuron.local.aws.engine.embedded import create_sagemaker_role, embedded_aws, local_credentials
from smneuron.session import Session


@pytest.fixture
def account():
    with embedded_aws(service=EmbeddedService()) as url, local_credentials(url):
        session = Session.embedded(url)
        create_sagemaker_role(session)
        yield session


def test_the_token_opens_once_and_the_cookie_is_strict_and_http_only(account):
    with Console(account, allow_changes=True) as c:
        url, base = c.url, c.url.split("/?", 1)[0]
        with httpx.Client() as h:
            assert h.get(base + "/api/endpoints").status_code == 401
            first = h.get(url)
            assert first.status_code == 303 and first.headers["location"] == "/"
            cookie = first.headers["set-cookie"].lower()
            assert "httponly" in cookie and "samesite=strict" in cookie
            assert h.get(base + "/api/endpoints").json() == []
        assert httpx.get(url).status_code == 401  # spent: a leaked URL opens nothing
        with httpx.Client(cookies={"smneuron_console": "guessed"}) as h:
            assert h.get(base + "/api/endpoints").status_code == 401


def test_an_account_is_read_only_unless_changes_are_allowed(account):
    with Console(account) as c:  # as `smneuron console` starts against an account: read-only
        base = c.url.split("/?", 1)[0]
        with httpx.Client() as h:
            h.get(c.url)
            assert h.get(base + "/api/overview").json()["read_only"] is True
            refused = h.post(
                base + "/api/endpoints/x/delete", json={"confirm": "x"}, headers={"X-Smneuron-CSRF": c.csrf}
            )
            assert refused.status_code == 403 and "--allow-changes" in refused.json()["error"]
            assert h.get(base + "/api/matrix").status_code == 200  # reading works


def test_a_change_needs_the_pages_csrf_token_and_a_missing_endpoint_is_said(account):
    with Console(account, allow_changes=True) as c:
        base = c.url.split("/?", 1)[0]
        with httpx.Client() as h:
            h.get(c.url)
            assert c.csrf in h.get(base + "/").text  # the page carries it; a page elsewhere cannot read it
            assert h.post(base + "/api/endpoints/x/delete", json={"confirm": "x"}).status_code == 403
            missing = h.get(base + "/api/endpoints/nope")
            assert missing.status_code == 409 and "nope" in missing.json()["error"]


def test_a_notebook_starts_it_with_one_call(account):
    from smneuron.console.server import console

    c = console(session=account)
    try:  # the embedded SageMaker: changes allowed, the CLI equivalent is `smneuron --local ...`
        assert c.allow_changes and c.cli_prefix == ["smneuron", "--local"] and c.url in c._repr_html_()
        assert httpx.get(c.url, follow_redirects=False).status_code == 303
    finally:
        c.stop()


def test_the_reports_folder_is_listed_and_nothing_outside_it_is_served(account, tmp_path):
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "bench.html").write_text("<html><body>the bench report</body></html>")
    (tmp_path / "secret.html").write_text("not for the page")
    with Console(account, reports=tmp_path / "reports") as c:
        base = c.url.split("/?", 1)[0]
        with httpx.Client() as h:
            h.get(c.url)
            assert [r["name"] for r in h.get(base + "/api/reports").json()] == ["bench.html"]
            assert "the bench report" in h.get(base + "/reports/bench.html").text
            for name in ("..%2Fsecret.html", "secret.html", "%2E%2E%2Fsecret.html"):
                assert h.get(base + "/reports/" + name).status_code == 404


def test_the_artifact_check_is_doctors(account, tiny_classifier, tmp_path):
    from smneuron.compilation.encoder import compile_model
    from smneuron.deployment.doctor import doctor

    art = compile_model(
        tiny_classifier, tmp_path / "a", target="cpu", task="text-classification", buckets="16"
    ).out_dir
    with Console(account) as c:  # reading: allowed read-only too
        base = c.url.split("/?", 1)[0]
        with httpx.Client() as h:
            h.get(c.url)
            found = h.get(base + "/api/doctor", params={"artifact": str(art)}).json()
            assert {k: v for k, v in found.items() if k != "cli"} == doctor(art, session=account)
            assert (
                found["instance_type"] == "ml.c6i.xlarge" and found["cli"] == f"smneuron --local doctor {art}"
            )
            refused = h.get(base + "/api/doctor", params={"artifact": str(art), "instance": "ml.inf2.xlarge"})
            assert (
                refused.status_code == 409
                and "compiled for cpu and cannot run on ml.inf2.xlarge" in refused.json()["error"]
            )


def test_transform_jobs_are_listed_with_their_progress(account):
    """The jobs page's rows: each job with the input objects answered so far, as `smneuron transform` counts them."""
    from smneuron.console import api

    s3, sm = account.client("s3"), account.client("sagemaker")
    s3.create_bucket(Bucket="data")
    for n in range(2):
        s3.put_object(Bucket="data", Key=f"in/part-{n}.jsonl", Body=b'"a text"\n')
    sm.create_model(ModelName="m", ExecutionRoleArn=account.role_arn, PrimaryContainer={"Image": "img"})
    sm.create_transform_job(
        TransformJobName="j1", ModelName="m",
        TransformInput={"DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://data/in/"}},
                        "SplitType": "Line", "ContentType": "application/jsonlines"},
        TransformOutput={"S3OutputPath": "s3://data/out/"},
        TransformResources={"InstanceType": "ml.c6i.xlarge", "InstanceCount": 1},
    )  # fmt: skip
    (row,) = api.jobs(account)
    assert row["TransformJobName"] == "j1" and row["progress"] == "0 of 2 input object(s) answered"
