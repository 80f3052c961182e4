"""The embedded IAM's SimulatePrincipalPolicy, which the SageMaker SDK v3 calls before it creates anything."""

from __future__ import annotations

import json

import pytest

from smneuron.local.aws.engine.iam_simulation import decision


def test_decisions_follow_iam_for_policies_without_conditions():
    allow = {"Statement": [{"Effect": "Allow", "Action": ["sagemaker:*", "s3:GetObject"], "Resource": "*"}]}
    deny = {"Statement": {"Effect": "Deny", "Action": "sagemaker:Delete*", "Resource": "*"}}
    assert decision([allow], "sagemaker:CreateModel") == "allowed"
    assert decision([allow], "SageMaker:createmodel") == "allowed"  # actions are case-insensitive
    assert decision([allow], "s3:PutObject") == "implicitDeny"
    assert decision([allow, deny], "sagemaker:DeleteEndpoint") == "explicitDeny"  # a Deny wins
    assert decision([], "sagemaker:CreateModel") == "implicitDeny"


@pytest.mark.usefixtures("aws")
def test_the_simulation_answers_through_boto3_for_a_role_and_its_policies():
    import boto3

    from smneuron.local.aws.engine.embedded import LOCAL_ROLE_POLICY, patch_moto

    patch_moto()
    iam = boto3.client("iam", region_name="us-east-1")
    trust = {
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "sagemaker.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ]
    }
    arn = iam.create_role(RoleName="r", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    iam.put_role_policy(RoleName="r", PolicyName="p", PolicyDocument=json.dumps(LOCAL_ROLE_POLICY))
    got = iam.simulate_principal_policy(
        PolicySourceArn=arn, ActionNames=["sagemaker:CreateModel", "ec2:RunInstances"]
    )
    assert [(r["EvalActionName"], r["EvalDecision"]) for r in got["EvaluationResults"]] == [
        ("sagemaker:CreateModel", "allowed"),
        ("ec2:RunInstances", "implicitDeny"),
    ]
