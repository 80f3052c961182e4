"""When the embedded SageMaker snapshots what it keeps: soon after a request was answered, and not in a loop of its
own reads while nothing happens (an idle service used to spend a tenth of a core asking itself what changed)."""

from __future__ import annotations

import json
import threading

from conftest import until

from smneuron.local.aws import persistence, stream_route
from smneuron.local.aws.embedded import embedded_aws
from smneuron.session import Session


def test_a_request_is_snapshotted_and_the_snapshots_own_reads_are_not_requests(tmp_path, monkeypatch):
    monkeypatch.setattr(persistence, "INTERVAL_S", 0.05)
    monkeypatch.setattr(persistence, "QUIET_S", 3600.0)  # only a request brings a look here
    with embedded_aws() as url:
        keeper = persistence.Keeper(url, tmp_path)
        before = stream_route.answered
        keeper.snapshot(clean=False, force=True)  # a dozen reads of its own
        assert stream_route.answered == before

        stop = threading.Event()
        looking = threading.Thread(target=keeper.run, args=(stop,))
        looking.start()
        try:
            Session.embedded(url).client("s3").create_bucket(Bucket="kept")
            assert stream_route.answered == before + 1

            def kept() -> bool:
                doc = json.loads(keeper.path.read_text())
                return [b["Name"] for b in doc["s3"]] == ["kept"]

            until(kept, "a snapshot holding the new bucket", 30)
        finally:
            stop.set()
            looking.join(30)
