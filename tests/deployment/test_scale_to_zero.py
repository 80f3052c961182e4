"""Issue 62 #4: scale to zero is one rule for every verb. `deploy --min-copies 0` was accepted while `scale --min 0` on
the same endpoint was refused by a range check that gave no reason; an encoder's refusal said nothing of why. Now each
kind says what it scales to zero (text generation's copies do; an encoder's real-time instances do not, with AWS's
reason), and `deploy` and `scale`, CLI and SDK, hold to it."""

from __future__ import annotations

import pytest
from conftest import run_cli
from test_one_read import counted, endpoints  # noqa: F401  (the fixtures: an encoder "enc" and a text-generation "chat")

from smneuron.endpoints.scaling import scale
from smneuron.errors import UsageError
from smneuron.specs.models import ScalingSpec


def _target(session, resource: str) -> dict:
    (found,) = session.client("application-autoscaling").describe_scalable_targets(
        ServiceNamespace="sagemaker", ResourceIds=[resource]
    )["ScalableTargets"]
    return found


def test_an_encoders_instances_refuse_zero_with_awss_reason_and_copies_take_it(endpoints, session):  # noqa: F811
    code, _, err = run_cli("scale", "enc", "--min", "0", "--max", "2")
    said = " ".join(err.split())
    assert code == 2, said
    assert "--min 0: an encoder's real-time endpoint cannot scale to zero instances" in said
    assert "only when it hosts inference components" in said and "--min-copies 0" in said
    assert _target(session, "endpoint/enc/variant/AllTraffic")["MinCapacity"] == 1  # nothing was changed

    with pytest.raises(UsageError, match="min_capacity= 0: an encoder's real-time endpoint"):
        scale("enc", ScalingSpec(min_capacity=0, max_capacity=2), session=session)
    # a schedule that would take it to zero at night is the same floor
    code, _, err = run_cli("scale", "enc", "--min", "1", "--max", "2", "--schedule", "cron(0 22 * * ? *)=0-1")
    assert code == 2 and "--min 0: an encoder's real-time endpoint" in " ".join(err.split())

    code, out, err = run_cli("scale", "chat", "--min", "0", "--max", "2")
    assert code == 0, err
    assert "autoscaling 0-2 copies" in out
    assert _target(session, "inference-component/chat-ic")["MinCapacity"] == 0


def test_deploy_refuses_an_encoders_zero_floor_in_the_same_words(endpoints, tmp_path):  # noqa: F811
    from conftest import run_cli as cli

    code, _, err = cli("deploy", str(tmp_path / "enc" / "a"), "--instance", "ml.c6i.xlarge", "--min", "0",
                       "--max", "2", "--dry-run")  # fmt: skip
    said = " ".join(err.split())
    assert code == 2 and "--min 0: an encoder's real-time endpoint cannot scale to zero instances" in said, (
        said
    )
