"""When the embedded SageMaker snapshots what it keeps: soon after a request was answered, and not in a loop of its
own reads while nothing happens (an idle service used to spend a tenth of a core asking itself what changed)."""

from __future__ import annotations

import json
import threading

from conftest import until

from smneuron.local.aws.data_plane import stream_route
from smneuron.local.aws.embedded_service import EmbeddedService
from smneuron.local.aws.engine.embedded import embedded_aws
from smneuron.local.aws.state import persistence
from smneuron.session import Session


def test_a_request_is_snapshotted_and_the_snapshots_own_reads_are_not_requests(tmp_path, monkeypatch):
    monkeypatch.setattr(persistence, "INTERVAL_S", 0.05)
    monkeypatch.setattr(persistence, "QUIET_S", 3600.0)  # only a request brings a look here
    service = EmbeddedService()
    with embedded_aws(service=service) as url:
        keeper = persistence.Keeper(url, tmp_path)
        before = service.answered
        keeper.snapshot(clean=False, force=True)  # a dozen reads of its own
        assert service.answered == before

        stop = threading.Event()
        looking = threading.Thread(target=keeper.run, args=(stop, lambda: service.answered))
        looking.start()
        try:
            client = Session.embedded(url)
            client.client("s3").list_buckets()  # reads change nothing: they bring no look
            client.client("sagemaker").list_endpoints()
            client.client("cloudwatch").describe_alarms()
            assert service.answered == before
            # a log line is on disk (its count) once answered, and nothing follows from it: it brings no look either
            client.client("logs").create_log_group(logGroupName="/aws/sagemaker/Endpoints/ep")
            assert service.answered == before
            client.client("s3").create_bucket(Bucket="kept")
            assert service.answered == before + 1

            def kept() -> bool:
                doc = json.loads(keeper.path.read_text())
                return [b["Name"] for b in doc["s3"]] == ["kept"]

            until(kept, "a snapshot holding the new bucket", 30)
        finally:
            stop.set()
            looking.join(30)


def test_what_can_change_the_embedded_aws_is_told_from_what_cannot():
    """Reads by every protocol's naming, and invocations, bring no look; a write, or a request whose action is in
    its body (IAM's query protocol), does."""

    def env(method: str, path: str = "/", target: str | None = None) -> dict:
        return {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            **({"HTTP_X_AMZ_TARGET": target} if target else {}),
        }

    reads = [
        env("POST", target="SageMaker.DescribeEndpoint"),
        env("POST", target="AnyScaleFrontendService.DescribeScalableTargets"),
        env("POST", target="Logs_20140328.GetLogEvents"),
        env("POST", "/service/GraniteServiceVersion20100801/operation/DescribeAlarms"),
        env("GET", "/bucket/key"),
        env("HEAD", "/bucket/key"),
        env("POST", "/endpoints/ep/invocations"),
    ]
    writes = [
        env("POST", target="SageMaker.CreateEndpoint"),
        env("POST", target="SageMaker.UpdateEndpointWeightsAndCapacities"),
        env("POST", "/service/GraniteServiceVersion20100801/operation/PutMetricAlarm"),
        env("PUT", "/bucket/key"),
        env("DELETE", "/bucket/key"),
        env("POST", "/"),  # IAM / STS: the action is in the form body
    ]
    assert [stream_route.may_change(e) for e in reads] == [False] * len(reads)
    assert [stream_route.may_change(e) for e in writes] == [True] * len(writes)


def test_a_log_line_rebuilds_only_the_count_of_what_is_not_kept(tmp_path):
    """The model servers ship every log line through the service's API, each a change that is answered once on disk.
    Logs are not kept, only counted: such a change rebuilds that count, not the whole snapshot (which took ~40 reads
    of its own before every log line was answered)."""
    service = EmbeddedService()
    with embedded_aws(service=service) as url:
        keeper = persistence.Keeper(url, tmp_path)
        reads: list[str] = []
        keeper.session.boto_session.events.register(
            "before-call", lambda model, **_: reads.append(model.name)
        )
        client = Session.embedded(url)
        client.client("s3").create_bucket(Bucket="kept")
        keeper.snapshot(clean=False, force=True)
        assert "ListObjectsV2" in reads  # a whole snapshot lists every bucket's objects
        reads.clear()
        client.client("logs").create_log_group(logGroupName="/aws/sagemaker/Endpoints/ep")
        keeper.persist("logs")
        doc = json.loads(keeper.path.read_text())
        assert doc["not_kept"] == {"CloudWatch log groups": 1} and [b["Name"] for b in doc["s3"]] == ["kept"]
        assert reads and not {"ListBuckets", "ListObjectsV2", "ListEndpoints", "ListRoles"} & set(reads), (
            reads
        )
