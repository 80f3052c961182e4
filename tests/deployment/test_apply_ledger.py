"""The apply engine's ledger: what one apply created is undone newest first; what it did not create stays."""

from __future__ import annotations

from smneuron.deployment.apply import Ledger, _label
from smneuron.endpoints import autoscaling


def test_undo_removes_what_was_created_newest_first_and_keeps_an_updated_endpoint(session, role):
    sm = session.client("sagemaker")
    aas = session.client("application-autoscaling")
    calls = []
    sm.meta.events.register("before-call.sagemaker.*", lambda model, **_: calls.append(model.name))
    aas.meta.events.register(
        "before-call.application-autoscaling.*", lambda model, **_: calls.append(model.name)
    )
    sm.create_model(
        ModelName="m",
        ExecutionRoleArn=role,
        PrimaryContainer={"Image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/x:1"},
    )
    done = autoscaling.reconcile(
        session,
        autoscaling.ScalingPlan(
            "endpoint/ep/variant/AllTraffic",
            1,
            2,
            scheduled=[
                {
                    "ServiceNamespace": "sagemaker",
                    "ScheduledActionName": "smneuron-ep-schedule-1",
                    "ResourceId": "endpoint/ep/variant/AllTraffic",
                    "ScalableDimension": autoscaling.DIMENSION,
                    "Schedule": "cron(0 8 * * ? *)",
                    "ScalableTargetAction": {"MinCapacity": 1, "MaxCapacity": 2},
                }
            ],
        ),
    )
    ledger = Ledger(session)
    ledger.add("model", "m")
    ledger.created += done.created
    ledger.add("endpoint", "ep")  # an update: apply keeps the endpoint that was there
    calls.clear()
    assert ledger.undo(keep_endpoint=True) == []
    assert calls == ["DeleteScheduledAction", "DeregisterScalableTarget", "DeleteModel"]
    assert sm.list_models()["Models"] == []
    assert aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"] == []
    assert Ledger(session).untouched and ledger.labels() == [
        "model m",
        "scalable target endpoint/ep/variant/AllTraffic",
        "scheduled action smneuron-ep-schedule-1",
        "endpoint ep",
    ]


def test_undo_of_something_already_gone_is_not_a_leftover(session):
    ledger = Ledger(session)
    ledger.add("endpoint_config", "never-made")
    ledger.add("alarm", "smneuron-gone-5xx")
    assert ledger.undo(keep_endpoint=False) == []
    assert (
        _label("scaling_policy", "endpoint/x/variant/v|dim|smneuron-x-target")
        == "scaling policy smneuron-x-target"
    )
