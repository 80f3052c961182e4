"""What rolls a deployment back, for both kinds: the endpoint's CloudWatch alarms, and for text generation the rolling
copy update (UpdateInferenceComponent.DeploymentConfig, botocore's InferenceComponentDeploymentConfig) they guard."""

from __future__ import annotations

import math


def alarms(endpoint: str, variant: str, latency_p99_ms: int | None) -> list[dict]:
    """The CloudWatch alarms that roll a blue/green update back (5XX; latency p99 when asked)."""
    dims = [{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": variant}]
    common = {
        "Namespace": "AWS/SageMaker",
        "Dimensions": dims,
        "Period": 60,
        "TreatMissingData": "notBreaching",
    }
    out = [
        {
            **common,
            "AlarmName": f"smneuron-{endpoint}-5xx",
            "MetricName": "Invocation5XXErrors",
            "Statistic": "Sum",
            "EvaluationPeriods": 1,
            "Threshold": 0.0,
            "ComparisonOperator": "GreaterThanThreshold",
            "AlarmDescription": "smneuron: roll back a deployment that serves 5XX errors",
        }
    ]
    if latency_p99_ms:
        out.append(
            {
                **common,
                "AlarmName": f"smneuron-{endpoint}-latency-p99",
                "MetricName": "ModelLatency",
                "ExtendedStatistic": "p99",
                "EvaluationPeriods": 3,
                "Threshold": float(latency_p99_ms * 1000),
                "ComparisonOperator": "GreaterThanThreshold",
                "AlarmDescription": f"smneuron: roll back when model latency p99 exceeds {latency_p99_ms} ms",
            }
        )
    return out


def copy_batch(copies: int, asked: int | None = None) -> int:
    """Copies replaced per batch: ``asked``, else one copy or 20% of the copies, whichever is larger."""
    return max(1, min(asked or math.ceil(copies * 0.2), max(copies, 1)))


def batches(copies: int, batch: int) -> list[int]:
    """How many copies each batch of a rolling update replaces: ``[1, 1, 1, 1]`` for 4 copies one by one."""
    full, rest = divmod(max(copies, 1), batch)
    return [batch] * full + ([rest] if rest else [])


def rolling_update(batch: int, wait_s: int, alarm_names: list[str]) -> dict:
    """UpdateInferenceComponent's DeploymentConfig: ``batch`` copies at a time, ``wait_s`` of bake after each, the
    same size back on a rollback, and auto-rollback on ``alarm_names``."""
    size = {"Type": "COPY_COUNT", "Value": batch}
    config: dict = {
        "RollingUpdatePolicy": {
            "MaximumBatchSize": size,
            "WaitIntervalInSeconds": wait_s,
            "RollbackMaximumBatchSize": dict(size),
        }
    }
    if alarm_names:
        config["AutoRollbackConfiguration"] = {"Alarms": [{"AlarmName": a} for a in alarm_names]}
    return config
