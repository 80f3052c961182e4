"""The mistakes a new user makes, run through the CLI as a subprocess (as a person runs it).

Every case must exit 1 (a user error) or 2 (a usage error) with a message that names the problem and
the fix, never a traceback or "Unexpected error", and leave nothing behind in the embedded AWS.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e  # servers, subprocesses or the embedded service: not in the fast loop

CLI = [sys.executable, "-m", "smneuron.cli.main"]


@pytest.fixture(scope="module")
def world(tiny_classifier, tiny_encoder, tiny_llama, minilm_dir, tmp_path_factory):
    """Files a user might point smneuron at, and an embedded AWS to point it to."""
    from smneuron.compilation.encoder import compile_model
    from smneuron.local.aws.engine.embedded import create_sagemaker_role, embedded_aws
    from smneuron.session import Session

    root = tmp_path_factory.mktemp("mistakes")
    compile_model(tiny_classifier, root / "artifact", target="cpu", task="text-classification", buckets="16")
    no_tok = root / "no-tokenizer"
    no_tok.mkdir()
    for f in tiny_classifier.iterdir():
        if f.is_file() and not f.name.startswith(("tokenizer", "vocab", "special_tokens")):
            shutil.copy(f, no_tok / f.name)
    masked = root / "masked-lm"
    shutil.copytree(tiny_classifier, masked)
    config = json.loads((masked / "config.json").read_text())
    (masked / "config.json").write_text(json.dumps({**config, "architectures": ["BertForMaskedLM"]}))
    (root / "foreign").mkdir()
    (root / "foreign" / "notes.txt").write_text("mine")
    (root / "not-a-model").mkdir()
    (root / "data.jsonl").write_text('{"inputs": "hello world"}\n{"inputs": "good morning"}\n')
    (root / "weights.bin").write_bytes(bytes(range(128, 256)))  # not text: a file passed where text goes
    run = {"requests_ok": 100, "throughput_rps": 50.0, "latency_ms": {"p99": 40.0}}
    (root / "report.json").write_text(json.dumps({"instance_count": 1, "runs": [run]}))  # a bench's report
    (root / "empty-report.json").write_text(
        json.dumps({"instance_count": 1, "runs": [{**run, "requests_ok": 0}]})
    )
    cut = root / "cut-weights"  # a download cut short: the weights file truncated
    shutil.copytree(tiny_classifier, cut)
    for weights in cut.glob("*.safetensors"):
        weights.write_bytes(weights.read_bytes()[:1000])
    (root / "bad.yaml").write_text("endpoint:\n  instnce_type: ml.inf2.xlarge\n")
    (root / "sso-config").write_text(  # a profile whose SSO session was never logged in on this machine
        "[profile dev]\nsso_session = corp\nsso_account_id = 123456789012\nsso_role_name = Admin\nregion = us-east-1\n"
        "[sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = us-east-1\n"
    )
    (root / "no-task.yaml").write_text("model_name: m\n")
    fake = root / "no-aiohttp" / "aiohttp"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'aiohttp'\", name='aiohttp')\n"
    )
    shutil.copytree(tiny_encoder, root / "encoder")  # a BertModel: no classifier weights
    wrong = root / "wrong-tokenizer"  # the tiny model with another model's tokenizer
    shutil.copytree(tiny_classifier, wrong)
    shutil.copy(minilm_dir / "tokenizer.json", wrong / "tokenizer.json")
    with embedded_aws() as url:
        create_sagemaker_role(Session.embedded(url))  # what `local up` makes: CreateModel checks the role
        _an_encoder_endpoint(url, "enc")
        yield {"root": root, "url": url, "model": tiny_classifier, "llama": tiny_llama}


def _an_encoder_endpoint(url: str, name: str) -> None:
    """An endpoint whose Model is smneuron's encoder container (only its records: nothing invokes it)."""

    from smneuron.session import Session

    sm = Session.embedded(url).client("sagemaker")
    image = (
        "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.5.1-cpu-py311-ubuntu22.04-sagemaker"
    )
    env = {"TS_DEFAULT_SERVICE_HANDLER": "/opt/ml/model/code/smneuron_handler.py:handle"}
    sm.create_model(ModelName=name, ExecutionRoleArn="arn:aws:iam::123456789012:role/smneuron-execution-role",
                    PrimaryContainer={"Image": image, "Environment": env})  # fmt: skip
    sm.create_endpoint_config(EndpointConfigName=name, ProductionVariants=[
        {"VariantName": "AllTraffic", "ModelName": name, "InstanceType": "ml.m5.large", "InitialInstanceCount": 1}
    ])  # fmt: skip
    sm.create_endpoint(EndpointName=name, EndpointConfigName=name)


def _env(world, **extra: str) -> dict[str, str]:
    from smneuron.files.local_record import embedded_keys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SMNEURON_"))}
    env.update(
        **embedded_keys(world["url"]).environment(),
        AWS_REGION="us-east-1",
        AWS_CONFIG_FILE=str(world["root"] / "no-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(world["root"] / "no-credentials"),
        SMNEURON_ENDPOINT_URL=world["url"],
        SMNEURON_CACHE_DIR=str(world["root"] / "cache"),
        # a `local up` among the mistakes never meets the user's own state folder
        SMNEURON_STATE_DIR=str(world["root"] / "state"),
        HF_HUB_OFFLINE="1",
    )
    env.update(extra)
    return {k: v for k, v in env.items() if v != ""}


def busy_port() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


# (id, arguments with {placeholders}, exit code, what the message must say, extra environment, stdin)
CASES = [
    # usage errors: exit 2 with the usage and the problem
    ("no-arguments", "", 2, ["Usage: smneuron"], {}, None),
    ("unknown-command", "deploi x", 2, ["No such command", "deploy"], {}, None),
    (
        "unknown-option",
        "deploy {artifact} --instnace ml.inf2.xlarge",
        2,
        ["No such option: --instnace", "--instance"],
        {},
        None,
    ),
    ("missing-argument", "deploy", 2, ["Missing argument"], {}, None),
    # a local artifact's own mistake is said before any AWS setting is asked for (here: no region anywhere)
    (
        "deploy-missing-artifact-no-region",
        "deploy {root}/nope --instance ml.inf2.xlarge --dry-run",
        1,
        ["nope does not exist", "s3:// URI"],
        {"AWS_REGION": ""},
        None,
    ),
    (
        "evaluate-missing-data-no-region",
        "evaluate {root}/nope.jsonl --endpoint enc",
        1,
        ["Cannot read evaluation data", "nope.jsonl"],
        {"AWS_REGION": ""},
        None,
    ),
    (
        "deploy-bad-scaling-no-region",
        "deploy {artifact} --instance ml.c6i.xlarge --min 3 --max 1 --dry-run",
        2,
        ["--max (max_capacity) is 1, below --min (min_capacity) 3"],
        {"AWS_REGION": ""},
        None,
    ),
    # MODEL_DIR may come from smneuron.yaml instead: given by neither, the same usage error
    ("compile-without-model", "compile", 2, ["No model directory given", "Pass MODEL_DIR"], {}, None),
    # leaving a shape out gets compile's choice from config.json, not the project-file field's default (it said [128])
    (
        "compile-bad-buckets",
        "compile {model} -o {root}/b --buckets 16,abc",
        2,
        [
            "--buckets must be a list of whole numbers",
            "leave it out for its default (32,64,128 within the model's positions)",
        ],
        {},
        None,
    ),
    (
        "compile-batch-zero",
        "compile {model} -o {root}/b --batch-size 0",
        2,
        ["--batch-size must be a whole number from 1", "(chosen from the model's size class)"],
        {},
        None,
    ),
    (
        "compare-without-model",
        "compare --instances ml.c6i.xlarge",
        2,
        ["No model directory given", "Pass MODEL"],
        {},
        None,
    ),
    (
        "missing-option",
        "compile {model}",
        2,
        ["needs the artifact directory", "-o DIR", "--dry-run"],
        {},
        None,
    ),
    ("not-a-number", "deploy {artifact} --count many", 2, ["Invalid value for '--count'"], {}, None),
    ("tune-without-output", "tune {model}", 2, ["Missing option", "--output"], {}, None),
    (
        "tune-batch-size-zero",
        "tune {model} -o {root}/tuned --batch-sizes 8,0",
        2,
        ["--batch-sizes must be a whole number from 1 to 1024, got 0"],
        {},
        None,
    ),
    (
        "tune-bucket-out-of-range",
        "tune {model} -o {root}/tuned --bucket-set 32 --bucket-set 4",
        2,
        ["--bucket-set '4': each bucket is a token length from 8 to 8192"],
        {},
        None,
    ),
    # tune compiled and served every layout, then said "1 validation error for EndpointSpec" for each
    (
        "tune-instance-typo",
        "tune {model} -o {root}/tuned --instance ml.m5.xlrge",
        1,
        ["Unknown instance type 'ml.m5.xlrge'. Did you mean 'ml.m5.xlarge'?"],
        {},
        None,
    ),
    (
        "tune-instance-of-another-target",
        "tune {model} -o {root}/tuned --instance ml.inf2.xlarge",
        1,
        ["--instance ml.inf2.xlarge runs inf2 artifacts, and tune compiles for cpu", "--target inf2"],
        {},
        None,
    ),
    (
        "tune-where-it-cannot-measure",
        "tune {model} -o {root}/tuned --target inf2",
        1,
        ["Neuron runtime is not here", "--dry-run"],
        {},
        None,
    ),
    # AWS settings botocore refuses: they were "Unexpected error: InvalidDefaultsMode" and the like
    (
        "aws-defaults-mode",
        "list",
        1,
        ["value botocore refuses", "turbo", "AWS_* environment"],
        {"AWS_DEFAULTS_MODE": "turbo"},
        None,
    ),
    (
        "aws-sts-endpoints",
        "list",
        1,
        ["value botocore refuses", "weird"],
        {"AWS_STS_REGIONAL_ENDPOINTS": "weird"},
        None,
    ),
    # an endpoint URL without its scheme: "Unexpected error: ValueError: Invalid endpoint"; a flag's value exits 2
    (
        "endpoint-url-no-scheme",
        "--endpoint-url localhost:4566 list",
        2,
        ["--endpoint-url (endpoint_url) is 'localhost:4566'", "e.g. http://localhost:4566"],
        {},
        None,
    ),
    (
        "aws-endpoint-url-no-scheme",
        "list",
        1,
        ["AWS_ENDPOINT_URL is 'localhost:4566'", "scheme and the host"],
        {"SMNEURON_ENDPOINT_URL": "", "AWS_ENDPOINT_URL": "localhost:4566"},
        None,
    ),
    # one service's (botocore reads AWS_ENDPOINT_URL_<SERVICE> itself); a dead proxy keeps any call on this machine
    (
        "service-endpoint-url",
        "list",
        1,
        ["Invalid endpoint: nope", "AWS_ENDPOINT_URL_<SERVICE>"],
        {
            "SMNEURON_ENDPOINT_URL": "",
            "AWS_ENDPOINT_URL_SAGEMAKER": "nope",
            "HTTPS_PROXY": "http://127.0.0.1:9",
        },
        None,
    ),
    # an SSO profile not logged in: it was "Unexpected error: SSOTokenLoadError"
    (
        "sso-not-logged-in",
        "list",
        1,
        ["credentials could not be retrieved for profile 'dev'", "aws sso login --profile dev"],
        {
            "SMNEURON_ENDPOINT_URL": "",
            "AWS_ACCESS_KEY_ID": "",
            "AWS_SECRET_ACCESS_KEY": "",
            "AWS_PROFILE": "dev",
            "AWS_CONFIG_FILE": "{root}/sso-config",
            "HOME": "{root}",
            "HTTPS_PROXY": "http://127.0.0.1:9",
        },
        None,
    ),
    # a proxy in the shell that does not answer: it was "Unexpected error: ProxyConnectionError"
    (
        "dead-proxy",
        "list",
        1,
        ["Cannot reach the proxy http://127.0.0.1:9 that AWS calls go through", "NO_PROXY"],
        {"SMNEURON_ENDPOINT_URL": "", "HTTPS_PROXY": "http://127.0.0.1:9"},
        None,
    ),
    # a CA bundle that is not there: it was "Unexpected error: SSLError"
    (
        "aws-ca-bundle-missing",
        "--endpoint-url https://127.0.0.1:{busy} list",
        1,
        ["AWS_CA_BUNDLE names", "no-bundle.pem, which is not a file", "unset AWS_CA_BUNDLE"],
        {"AWS_CA_BUNDLE": "{root}/no-bundle.pem"},
        None,
    ),
    (
        "console-port-taken",
        "console --port {busy}",
        1,
        ["on 127.0.0.1 is already in use", "--port", "ss -ltnp"],
        {},
        None,
    ),  # fmt: skip
    # the file's bytes went and the texts were dropped (a fuzz of 2026-11-28)
    (
        "invoke-texts-and-data",
        "invoke enc hello --data {root}/report.json",
        2,
        ["Texts and --data were both given", "Give texts, or --data FILE"],
        {},
        None,
    ),
    # an empty --host bound every interface and printed "Serving on http://:8080" (a fuzz of 2026-11-28)
    (
        "serve-empty-host",
        "serve {artifact} --host= --port 0",
        2,
        ["Invalid value for --host: an empty value"],
        {},
        None,
    ),
    # "Unexpected error: OverflowError: bind(): port must be 0-65535" (a fuzz of 2026-11-28)
    (
        "console-port-out-of-range",
        "console --port 70000",
        2,
        ["--port 70000 is not a TCP port", "from 1 to 65535"],
        {},
        None,
    ),
    # it waited 120 s for a service that could not bind (moto's server thread exited; its start waited on) and left it
    (
        "local-up-port-taken",
        "local up --port {busy}",
        1,
        ["is already in use", "--port 0 for any free port"],
        {},
        None,
    ),
    (
        "quotas-unknown-type",
        "quotas --instance ml.inf9.huge",
        1,
        ["ml.inf9.huge", "smneuron instances"],
        {},
        None,
    ),
    ("group-without-command", "pipeline", 2, ["Usage: smneuron pipeline"], {}, None),
    (
        "old-load-flag",
        "bench --url http://127.0.0.1:9 --profile sweep",
        2,
        ["No such option: --profile"],
        {},
        None,
    ),
    # a prompt answered no
    ("prompt-declined", "delete some-endpoint", 1, ["got no yes on standard input", "--yes"], {}, "n\n"),
    (
        "prompt-without-input",
        "delete some-endpoint",
        1,
        ["nothing was deleted", "`smneuron delete some-endpoint --yes`"],
        {},
        "",
    ),
    # 0 meant "not given" and sent the encoder's body; the endpoint answered "needs messages or prompt"
    (
        "invoke-max-tokens-zero",
        "invoke some-endpoint hello --max-tokens 0",
        2,
        ["max_tokens 0", "at least 1", "--max-tokens"],
        {},
        None,
    ),  # fmt: skip
    # sampling values vLLM refuses: refused before sending, with the range (they printed "0 pieces" and exit 0)
    (
        "invoke-temperature-nan",
        "invoke some-endpoint hello --stream --temperature nan",
        2,
        ["temperature nan", "a finite number in [0, 2]", "--temperature"],
        {},
        None,
    ),
    (
        "invoke-seed-beyond-int64",
        "invoke some-endpoint hello --stream --seed 18446744073709551616",
        2,
        ["seed 18446744073709551616", "9223372036854775807", "--seed"],
        {},
        None,
    ),
    # specs, in the user's words
    (
        "count-zero",
        "deploy {artifact} --count 0 --dry-run",
        2,
        ["--count must be a whole number from 1 to 100, got 0"],
        {},
        None,
    ),
    # flags the spec refuses are usage errors (exit 2), as `scale --min 5 --max 2` and `--task sentiment` were: deploy's
    # and compile's said 1
    ("min-above-max", "deploy {artifact} --min 5 --max 2 --dry-run", 2, ["--max", "below --min"], {}, None),
    # accepted until 2026-11-28 (a fuzz of deploy on the embedded SageMaker): each is what AWS refuses, or what breaks a
    # later verb, refused before anything is uploaded or created
    (
        "deploy-role-account-not-12-digits",
        "deploy {artifact} --instance ml.c7i.xlarge --role arn:aws:iam::123:role/x",
        1,
        ["The execution role 'arn:aws:iam::123:role/x' is not one SageMaker takes", "twelve-digit account"],
        {},
        None,
    ),
    (
        "deploy-tag-replaces-smneurons-own",
        "deploy {artifact} --instance ml.c7i.xlarge --tag smneuron:endpoint=other",
        1,
        ["smneuron:endpoint, which smneuron sets itself", "--tag team=search"],
        {},
        None,
    ),
    (
        "deploy-schedule-min-above-max",
        "deploy {artifact} --instance ml.c7i.xlarge --max 6 --schedule at(2027-01-01T00:00:00)=5-2",
        1,
        ["minimum 5 is above its maximum 2", "the minimum at most the maximum"],
        {},
        None,
    ),
    # a fuzz of 2026-11-28: a container variable smneuron derives from a setting was replaced without a word (the
    # plan said 2 workers and inference.py; the endpoint would have run 9, or a module that is not there)
    (
        "deploy-env-contradicts-its-setting",
        "deploy {artifact} --instance ml.c6i.xlarge --env SAGEMAKER_MODEL_SERVER_WORKERS=9 --env SAGEMAKER_PROGRAM=x "
        "--dry-run",
        1,
        ["SAGEMAKER_MODEL_SERVER_WORKERS=9 (smneuron sets 2: --workers", "SAGEMAKER_PROGRAM=x", "--code DIR"],
        {},
        None,
    ),
    # an unknown load profile was "exit 1" after the credentials were asked for; a bad choice is a usage error, said
    # first (here without credentials)
    (
        "bench-unknown-rate-type",
        "bench ep --rate-type fast",
        2,
        ["--rate-type must be one of", "'sweep' or 'find-max', got 'fast'"],
        {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "SMNEURON_ENDPOINT_URL": ""},
        None,
    ),
    (
        "compare-unknown-rate-type",
        "compare {model} --instances ml.c7i.xlarge --rate-type fast",
        2,
        ["--rate-type must be one of", "got 'fast'"],
        {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "SMNEURON_ENDPOINT_URL": ""},
        None,
    ),
    # an empty value (an unset shell variable: --role "$ROLE") meant "not given": the default role, bucket or no
    # security group, without a word
    (
        "deploy-empty-role",
        "deploy {artifact} --instance ml.c7i.xlarge --role=",
        2,
        ["Invalid value for --role: an empty value was given", "leave the flag out"],
        {},
        None,
    ),
    (
        "deploy-empty-security-group-list",
        "deploy {artifact} --instance ml.c7i.xlarge --subnet subnet-1 --security-group=, --dry-run",
        2,
        ["Invalid value for --security-group: an empty value was given"],
        {},
        None,
    ),
    # a fuzz of 2026-11-28: each was planned or packaged, and would have failed later
    (
        "deploy-image-uri-not-registry-repository",
        "deploy {artifact} --instance ml.c7i.xlarge --image-uri nope --dry-run",
        2,
        ["'nope' is not an image URI CreateModel takes", "REGISTRY/REPOSITORY:TAG"],
        {},
        None,
    ),
    (
        "deploy-ecr-image-of-another-region",
        "deploy {artifact} --instance ml.c7i.xlarge --image-uri "
        "763104351884.dkr.ecr.eu-west-1.amazonaws.com/pytorch-inference:2.6.0-cpu-py312 --dry-run",
        1,
        ["is in Amazon ECR in eu-west-1, and the endpoint is in us-east-1", "Push (or replicate) the image"],
        {},
        None,
    ),
    (
        "package-code-folder-not-there",
        "package {artifact} -o {root}/never.tar.gz --code {root}/no-such-code",
        1,
        ["--code (extra_code=)", "no-such-code is not there", "Give the folder"],
        {},
        None,
    ),
    (
        "package-wheel-that-is-no-wheel",
        "package {artifact} -o {root}/never.tar.gz --wheel {root}/artifact/smneuron.json",
        1,
        ["smneuron.json is not a wheel (a .whl file"],
        {},
        None,
    ),
    (
        "compile-empty-compiler-arg",
        "compile {model} --dry-run --target inf2 --compiler-arg=",
        2,
        ["Invalid value for --compiler-arg: an empty value was given"],
        {},
        None,
    ),
    (
        "instances-zero-cores-per-model",
        "instances --cores-per-model 0",
        2,
        ["not in the range x>=1"],
        {},
        None,
    ),
    (
        "deploy-image-uri-too-long",
        "deploy {artifact} --instance ml.c7i.xlarge --image-uri " + "a" * 256,
        2,
        ["--image-uri (endpoint.image_uri)", "at most 255 characters"],
        {},
        None,
    ),
    (
        "instance-typo",
        "deploy {artifact} --instance ml.m5.xlrge --dry-run",
        2,
        ["Did you mean 'ml.m5.xlarge'"],
        {},
        None,
    ),
    (
        "cpu-artifact-on-inf2",
        "deploy {artifact} --instance ml.inf2.xlarge --dry-run",
        1,
        ["compiled for cpu", "--target inf2"],
        {},
        None,
    ),
    (
        "cpu-artifact-on-gpu",
        "deploy {artifact} --instance ml.g6.xlarge --dry-run",
        1,
        ["compiled for cpu", "ml.g6.xlarge", "--target cuda"],
        {},
        None,
    ),
    (
        "bad-endpoint-name",
        "deploy {artifact} --instance ml.c6i.xlarge --name bad_name! --dry-run",
        2,
        ["not valid", "--name bad-name"],
        {},
        None,
    ),
    (
        "trainium",
        "deploy {artifact} --instance ml.trn1.2xlarge --dry-run",
        1,
        ["Trainium", "ml.inf2"],
        {},
        None,
    ),
    (
        "bad-schedule",
        "deploy {artifact} --instance ml.c6i.xlarge --schedule daily=1-2 --dry-run",
        1,
        ["Cannot read the schedule", "cron("],
        {},
        None,
    ),
    (
        "bench-report-without-slo",
        "deploy {artifact} --instance ml.c6i.xlarge --bench-report {root}/data.jsonl --dry-run",
        2,
        ["--bench-report needs --slo-p99-ms", "the p99 latency (ms) the endpoint must meet"],
        {},
        None,
    ),
    ("artifact-missing", "deploy {root}/nope --instance ml.c6i.xlarge", 1, ["does not exist"], {}, None),
    (
        "not-an-artifact",
        "deploy {root}/not-a-model --instance ml.c6i.xlarge",
        1,
        ["not a compiled artifact", "smneuron compile"],
        {},
        None,
    ),
    (
        "project-file-typo",
        "--config {root}/bad.yaml deploy {artifact} --dry-run",
        1,
        ["instnce_type", "Did you mean 'instance_type'"],
        {},
        None,
    ),
    (
        "project-file-missing",
        "--config {root}/missing.yaml deploy {artifact} --dry-run",
        1,
        ["Cannot read", "missing.yaml"],
        {},
        None,
    ),
    ("infra-stack-typo", "infra render basee", 1, ["Unknown stack 'basee'", "Did you mean 'base'"], {}, None),
    # compile: silently wrong before, refused now
    (
        "no-tokenizer",
        "compile {root}/no-tokenizer -o {root}/out1 --target cpu",
        1,
        ["has no tokenizer", "save_pretrained"],
        {},
        None,
    ),
    (
        "task-unknowable",
        "compile {root}/masked-lm -o {root}/out2 --target cpu",
        1,
        ["BertForMaskedLM", "--task", "text-classification"],
        {},
        None,
    ),
    ("model-missing", "compile {root}/nope -o {root}/out3 --target cpu", 1, ["does not exist"], {}, None),
    (
        "not-a-model-dir",
        "compile {root}/not-a-model -o {root}/out4 --target cpu",
        1,
        ["no config.json", "save_pretrained"],
        {},
        None,
    ),
    (
        "no-neuron-sdk",
        "compile {model} -o {root}/out5 --target inf2 --task text-classification",
        1,
        ["torch-neuronx", "--target cpu"],
        {},
        None,
    ),
    (
        "bucket-too-small",
        "compile {model} -o {root}/out6 --target cpu --buckets 4",
        2,
        ["--buckets (compile.buckets): bucket lengths must be between 8 and 8192, got [4]"],
        {},
        None,
    ),
    (
        "task-typo",
        "compile {model} -o {root}/out7 --target cpu --task sentiment",
        2,
        ["--task must be one of", "got 'sentiment'", "Use one of them"],
        {},
        None,
    ),
    (
        "foreign-output-dir",
        "compile {model} -o {root}/foreign --target cpu --task text-classification",
        1,
        ["not empty", "new or empty directory"],
        {},
        None,
    ),
    # a file where a directory or a package belongs: said as such, not "does not exist" or tarfile's internals
    (
        "compile-a-file",
        "compile {root}/data.jsonl -o {root}/out8 --target cpu",
        1,
        ["is a file", "model directory"],
        {},
        None,
    ),  # fmt: skip
    (
        "deploy-a-file",
        "deploy {root}/data.jsonl --instance ml.c6i.xlarge --dry-run",
        1,
        ["not a model package", "smneuron compile"],
        {},
        None,
    ),
    # a checkpoint without the task's head compiled "fine" with random weights
    (
        "random-head",
        "compile {root}/encoder -o {root}/out9 --target cpu --task text-classification",
        1,
        ["no weights for classifier", "random", "--task feature-extraction", "--allow-random-weights"],
        {},
        None,
    ),
    (
        "tokenizer-of-another-model",
        "compile {root}/wrong-tokenizer -o {root}/out10 --target cpu",
        1,
        ["30522 tokens", "vocab_size", "save_pretrained"],
        {},
        None,
    ),
    # generation flags on an encoder endpoint got the model's 400
    (
        "stream-an-encoder",
        "invoke enc hello --stream",
        1,
        ["serves an encoder", "not text generation", 'smneuron invoke enc "some text"'],
        {},
        None,
    ),
    ("max-tokens-on-an-encoder", "invoke enc hello --max-tokens 5", 1, ["serves an encoder"], {}, None),
    # SageMaker's OpenAI-compatible path (issue 48): chat completions only, a token of at most 12 h
    (
        "openai-an-encoder",
        "openai enc",
        1,
        ["serves an encoder", "chat completions", 'smneuron invoke enc "some text"'],
        {},
        None,
    ),
    (
        "bench-an-encoder-via-openai",
        "bench enc --via openai",
        1,
        ["This is an encoder endpoint", "--via ("],
        {},
        None,
    ),
    (  # a typo is not a hub id: nothing is downloaded (it retried huggingface.co for 46 s, then "Unexpected error")
        "evaluate-model-missing",
        "evaluate {root}/data.jsonl --model {root}/nope --url http://127.0.0.1:9 --task text-generation",
        1,
        ["--model", "no such directory", "nothing is downloaded"],
        {},
        None,
    ),
    (
        "evaluate-model-not-a-model",
        "evaluate {root}/data.jsonl --model {root}/not-a-model --url http://127.0.0.1:9",
        1,
        ["has no config.json"],
        {},
        None,
    ),
    (  # it was "Unexpected error: ValueError: Couldn't instantiate the backend tokenizer"
        "evaluate-model-no-tokenizer",
        "evaluate {root}/data.jsonl --model {root}/no-tokenizer --url http://127.0.0.1:9",
        1,
        ["has no tokenizer", "tokenizer.save_pretrained"],
        {},
        None,
    ),
    (
        "evaluate-via-openai",
        "evaluate {root}/data.jsonl --endpoint enc --via openai",
        1,
        ["This is an encoder endpoint", "--via (SageMaker's /openai/v1 path", "Encoder evaluations take"],
        {},
        None,
    ),
    ("openai-no-such-endpoint", "openai nope", 1, ["'nope' does not exist"], {}, None),
    # a command a hint prints is pasted as it is: with --local it carries --local (it acted on the account the
    # shell's credentials reach: `smneuron delete NAME`); with SMNEURON_LOCAL=1 in the shell it needs none
    ("local-hint-carries-local", "--local invoke", 2, ['`smneuron --local invoke NAME "hello"`'], {}, None),
    ("local-hint-by-env", "invoke", 2, ['(`smneuron invoke NAME "hello"`)'], {"SMNEURON_LOCAL": "1"}, None),
    ("openai-expiry-typo", "openai enc --expires soon", 2, ["--expires", "30m, 1h, 12h"], {}, None),
    ("openai-unknown-component", "openai enc --component other", 1, ["serves an encoder"], {}, None),
    # endpoints that are not there, URLs that are dead, AWS that does not answer
    (
        "invoke-dead-url",
        "invoke --url http://127.0.0.1:9 hello",
        1,
        ["Cannot reach http://127.0.0.1:9", "running"],
        {},
        None,
    ),
    (
        "invoke-missing-endpoint",
        "invoke no-such-endpoint hello",
        1,
        ["'no-such-endpoint' does not exist", "smneuron list"],
        {},
        None,
    ),
    ("invoke-nothing", "invoke", 2, ["No endpoint given", "--url"], {}, None),
    ("stream-nothing", "invoke --stream enc", 2, ["Nothing to send", "Tell me a story"], {}, None),
    ("schedule-nothing", "pipeline schedule", 2, ["No schedule given", "pipeline.schedule"], {}, None),
    ("status-missing-endpoint", "status no-such-endpoint", 1, ["does not exist"], {}, None),
    ("logs-missing-endpoint", "logs no-such-endpoint", 1, ["does not exist"], {}, None),
    ("scale-missing-endpoint", "scale no-such-endpoint --min 1 --max 2", 1, ["does not exist"], {}, None),
    (
        "bench-dead-url",
        "bench --url http://127.0.0.1:9 --data {root}/data.jsonl --duration 2 --rate-type synchronous",
        1,
        ["Cannot reach http://127.0.0.1:9: Connection refused", "Check that the endpoint is running"],
        {},
        None,
    ),
    # a typo that asked for 31 years of load: it ran
    (
        "bench-duration-past-a-day",
        "bench --url http://127.0.0.1:9 --data {root}/data.jsonl --duration 1e9",
        2,
        ["--duration must be a number above 0 and at most 86400, got 1000000000.0"],
        {},
        None,
    ),
    (
        "bench-too-short",
        "bench --url http://127.0.0.1:9 --data {root}/data.jsonl --duration 1",
        1,
        ["nothing to measure", "--duration"],
        {},
        None,
    ),
    (
        "bench-missing-endpoint",
        "bench no-such-endpoint --data {root}/data.jsonl --duration 3",
        1,
        ["does not exist"],
        {},
        None,
    ),
    ("bench-no-target", "bench --data {root}/data.jsonl", 2, ["Nothing to bench", "NAME", "--url"], {}, None),
    (
        "bench-data-missing",
        "bench --url http://127.0.0.1:9 --data {root}/nope.jsonl --duration 2",
        1,
        ["Cannot read the requests file", "nope.jsonl", "--data"],
        {},
        None,
    ),
    (
        "bench-data-malformed",
        "bench --url http://127.0.0.1:9 --data {root}/bad.yaml --duration 2",
        1,
        ["bad.yaml, line 1, is not JSON", "Each line"],
        {},
        None,
    ),
    ("bench-compare-one-file", "bench compare {root}/data.jsonl", 1, ["two report files"], {}, None),
    (
        "aws-unreachable",
        "status some-endpoint",
        1,
        ["Cannot reach AWS", "--endpoint-url"],
        {"SMNEURON_ENDPOINT_URL": "http://127.0.0.1:9"},
        None,
    ),
    (
        "no-credentials",
        "status some-endpoint",
        1,
        ["No AWS credentials", "aws configure"],
        {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""},
        None,
    ),
    (  # a token is signed with the caller's credentials: none, no token (and no traceback)
        "openai-no-credentials",
        "openai enc",
        1,
        ["No AWS credentials", "aws configure"],
        {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""},
        None,
    ),
    ("no-region", "status some-endpoint", 1, ["No AWS region", "--region"], {"AWS_REGION": ""}, None),
    (
        "serve-busy-port",
        "serve {artifact} --instance ml.c6i.xlarge --port {busy}",
        1,
        ["already in use", "--port"],
        {},
        None,
    ),
    (
        "missing-bench-extra",
        "bench --url http://127.0.0.1:9 --data {root}/data.jsonl --duration 2",
        1,
        ["pip install 'smneuron[bench]'"],
        {"PYTHONPATH": "{root}/no-aiohttp"},
        None,
    ),
    # pipeline
    (
        "pipeline-gate-without-labels",
        "pipeline run --model {model} --data {root}/data.jsonl -p MinAccuracy=0.9",
        1,
        ["needs labels", "MinAccuracy=none"],
        {},
        None,
    ),
    (
        "pipeline-without-task",
        "--config {root}/no-task.yaml pipeline upsert",
        1,
        ["compile.task", "text-classification"],
        {},
        None,
    ),
    # the rest of the command surface
    ("demo-instance-typo", "demo --instance ml.m5.xlrge", 1, ["Did you mean 'ml.m5.xlarge'"], {}, None),
    (
        "images-instance-typo",
        "images --instance ml.inf2.xlarg --region us-east-1",
        1,
        ["Did you mean"],
        {},
        None,
    ),
    ("inspect-missing", "inspect {root}/nope.tar.gz", 1, ["nope.tar.gz does not exist"], {}, None),
    ("instances-family-typo", "instances --family inf9", 2, ["Unknown instance family", "inf2"], {}, None),
    ("list-no-region", "list", 1, ["No AWS region", "--region"], {"AWS_REGION": ""}, None),
    ("local-engine-typo", "local up --engine nope", 2, ["Unknown engine", "--engine torchserve"], {}, None),
    (
        "local-no-capacity-typo",
        "local up --no-capacity ml.c7i.xlarg",
        2,
        ["--no-capacity: Unknown instance type 'ml.c7i.xlarg'", "Did you mean"],
        {},
        None,
    ),
    (
        "local-origin-not-an-origin",
        "local up --allow-origin notaurl",
        2,
        ["'notaurl' is not a browser origin", "--allow-origin http://localhost:8888"],
        {},
        None,
    ),
    (
        "doctor-wrong-family",
        "doctor {artifact} --instance ml.inf2.xlarge",
        1,
        ["compiled for cpu", "ml.inf2.xlarge"],
        {},
        None,
    ),
    (
        "serve-pools",
        "serve {artifact} --instance ml.c7i.xlarge,ml.m7i.xlarge",
        1,
        ["lays out one instance type", "Give one instance type"],
        {},
        None,
    ),
    (
        "package-not-an-artifact",
        "package {root}/not-a-model -o {root}/x.tar.gz",
        1,
        ["not a compiled artifact", "smneuron compile"],
        {},
        None,
    ),
    (
        "recommend-not-a-report",
        "recommend {root}/data.jsonl --slo-p99-ms 50 --target-rps 10",
        1,
        ["Cannot read bench report", "data.jsonl"],
        {},
        None,
    ),
    ("upload-missing", "upload {root}/nope", 1, ["does not exist", "s3://"], {}, None),
    # compare: every mistake is refused before anything is compiled or deployed
    (
        "compare-instance-typo",
        "compare {model} --instances ml.c7i.xlarge,ml.g6.xlarg",
        1,
        ["ml.g6.xlarg", "Did you mean", "ml.g6.xlarge"],
        {},
        None,
    ),
    ("compare-no-instances", "compare {model}", 2, ["Missing option", "--instances"], {}, None),
    (  # it was measured once without a word
        "compare-instance-twice",
        "compare {model} --instances ml.c7i.xlarge,ml.g6.xlarge,ml.c7i.xlarge",
        2,
        ["ml.c7i.xlarge is named twice", "Name each type once"],
        {},
        None,
    ),
    (  # it failed after compiling and deploying (10-17 s), issue 63 #5
        "compare-constant-without-rate",
        "compare {model} --instances ml.c7i.xlarge --rate-type constant",
        2,
        ["The constant profile sends at a rate: give --rate"],
        {},
        None,
    ),
    (
        "compare-artifact-shape",
        "compare {model} --instances ml.c7i.xlarge --artifact {artifact}",
        2,
        ["--artifact", "TARGET=DIR"],
        {},
        None,
    ),
    (
        "compare-artifact-unused",
        "compare {model} --instances ml.c7i.xlarge --artifact inf2={artifact}",
        1,
        ["artifact for inf2", "no instance type", "--instances"],
        {},
        None,
    ),
    (
        "compare-artifact-wrong-target",
        "compare {model} --instances ml.inf2.xlarge --artifact inf2={artifact}",
        1,
        ["holds a cpu artifact", "--artifact cpu="],
        {},
        None,
    ),
    (
        "compare-negative-rate",
        "compare {model} --instances ml.c7i.xlarge --target-rps -5",
        2,
        ["--target-rps must be a number above 0, got -5.0"],
        {},
        None,
    ),
    # compare's --rate is the bench's (a constant-rate profile's requests per second); the fleet's is --target-rps
    (
        "compare-rate-on-a-sweep",
        "compare {model} --instances ml.c7i.xlarge --rate 100",
        1,
        ["The sweep profile does not read --rate (read by constant, poisson, find-max)", "--target-rps"],
        {},
        None,
    ),
    (
        "compare-llm-with-encoder-slo",
        "compare {llama} --instances ml.c7i.xlarge --slo-p99-ms 100",
        1,
        ["--slo-p99-ms", "encoder setting", "text-generation model", "--slo-ttft-ms"],
        {},
        None,
    ),
    (
        "compare-encoder-with-llm-slo",
        "compare {model} --instances ml.c7i.xlarge --slo-ttft-ms 100 --output-tokens 8",
        1,
        ["--slo-ttft-ms, --output-tokens", "text-generation setting", "--slo-p99-ms"],
        {},
        None,
    ),
    (
        "compare-llm-longer-than-compiled",
        "compare {llama} --instances ml.c7i.xlarge --sequence-length 64 --prompt-tokens 60 --output-tokens 8",
        1,
        ["reach 68", "sequence length (64)", "--prompt-tokens", "--sequence-length"],
        {},
        None,
    ),
    (
        "compare-llm-prompt-tokens-shape",
        "compare {llama} --instances ml.c7i.xlarge --prompt-tokens many",
        2,
        ["'many'", "N,stdev,min,max", "--prompt-tokens"],
        {},
        None,
    ),
    (
        "compare-llm-only-inf1",
        "compare {llama} --instances ml.inf1.xlarge",
        1,
        ["Nothing to compare", "not for inf1", "ml.c7i.xlarge"],
        {},
        None,
    ),
    (
        "compare-only-neuron-here",
        "compare {model} --instances ml.inf2.xlarge",
        1,
        ["Nothing to compare", "torch-neuronx", "--artifact"],
        {},
        None,
    ),
    ("wait-missing-endpoint", "wait no-such-endpoint", 1, ["does not exist"], {}, None),
    # a place to write that cannot be written: said before the work (a bench, a compile) starts, not after it, which
    # printed "Unexpected error: FileNotFoundError" and lost the finished report
    (
        "bench-output-where-nothing-can-be-written",
        "bench --url http://127.0.0.1:9 -o /proc/smneuron-bench.json",
        2,
        [
            "--output /proc/smneuron-bench.json",
            "cannot take a new file",
            "Choose a path in a folder you can write",
        ],
        {},
        None,
    ),
    (
        "bench-plot-into-a-folder",
        "bench --url http://127.0.0.1:9 --plot {root}",
        2,
        ["--plot", "is a folder", "Name a file", "plot.png"],
        {},
        None,
    ),
    (
        "compile-output-is-a-file",
        "compile {model} -o {root}/data.jsonl --target cpu",
        2,
        ["is a file", "Choose another path"],
        {},
        None,
    ),
    (
        "package-output-under-a-file",
        "package {artifact} -o {root}/data.jsonl/model.tar.gz",
        2,
        ["data.jsonl is a file, where a folder"],
        {},
        None,
    ),
    (
        "evaluate-output-is-a-folder",
        "evaluate {root}/data.jsonl --model {model} -o {root}",
        2,
        ["--output", "is a folder"],
        {},
        None,
    ),
    # a file that is not what it should be: said with its name (was "Unexpected error: UnicodeDecodeError/JSONDecodeError")
    (
        "bench-data-not-text",
        "bench --url http://127.0.0.1:9 --data {root}/weights.bin",
        1,
        ["The requests file", "weights.bin is not text", "0x80 at offset 0"],
        {},
        None,
    ),
    (
        "bench-tokenizer-not-a-tokenizer",
        "bench --url http://127.0.0.1:9 --tokenizer {artifact}/smneuron.json",
        1,
        ["smneuron.json is not a tokenizer.json", "--tokenizer with the model"],
        {},
        None,
    ),
    (
        "compile-truncated-weights",
        "compile {root}/cut-weights -o {root}/never --target cpu",
        1,
        ["Cannot load", "cut-weights", "SafetensorError", "weights files whole"],
        {},
        None,
    ),
    # numbers out of range: refused (0 workers laid out the default, port 70000 was "Unexpected error: OverflowError")
    (
        "serve-zero-workers",
        "serve {artifact} --workers 0",
        2,
        ["--workers must be a whole number of at least 1, got 0"],
        {},
        None,
    ),
    (
        "serve-engine-typo",
        "serve {artifact} --engine nope",
        2,
        ["Unknown engine 'nope'", "torchserve"],
        {},
        None,
    ),
    (
        "serve-port-out-of-range",
        "serve {artifact} --port 70000",
        2,
        ["--port 70000 is not a TCP port", "0 for a free one"],
        {},
        None,
    ),
    (
        "compile-zero-jobs",
        "compile {model} -o {root}/never --target cpu --jobs 0",
        2,
        ["--jobs", "at least 1, got 0"],
        {},
        None,
    ),
    # a bench's numbers out of range: refused before any load (each ran: a sweep at --concurrency 0, nothing at --rate -5)
    (
        "bench-zero-concurrency",
        "bench --url http://127.0.0.1:9 --data {root}/data.jsonl --concurrency 0",
        2,
        ["--concurrency must be a whole number of at least 1, got 0"],
        {},
        None,
    ),
    (
        "bench-negative-rate",
        "bench --url http://127.0.0.1:9 --data {root}/data.jsonl --rate-type constant --rate -5",
        2,
        ["--rate must be a number above 0, got -5"],
        {},
        None,
    ),
    (
        "bench-negative-warmup",
        "bench --url http://127.0.0.1:9 --data {root}/data.jsonl --warmup -1",
        2,
        ["--warmup must be a number of at least 0"],
        {},
        None,
    ),
    # settings that only shape another one: alone they were dropped without a word
    (
        "deploy-slo-without-bench-report",
        "deploy {artifact} --instance ml.c6i.xlarge --slo-p99-ms 50 --dry-run",
        2,
        ["--slo-p99-ms needs --bench-report", "given alone, it would shape nothing"],
        {},
        None,
    ),
    # Batch Transform: what SageMaker refuses, refused before anything is uploaded (a dry run needs no AWS)
    (
        "transform-on-inf1",
        "transform {artifact} --input {root}/data.jsonl --instance ml.inf1.xlarge --dry-run",
        2,
        ["Batch Transform does not run on ml.inf1.xlarge", "TransformInstanceType", "ml.inf2.xlarge"],
        {},
        None,
    ),
    # a typo in the instance type: it was "Unexpected error: ValidationError"
    (
        "transform-instance-typo",
        "transform {artifact} --input {root}/data.jsonl --instance ml.m5.xlrge --dry-run",
        2,
        [
            "--instance (endpoint.instance_type): Unknown instance type 'ml.m5.xlrge'. Did you mean 'ml.m5.xlarge'?"
        ],
        {},
        None,
    ),
    (
        "transform-no-input",
        "transform {artifact} --instance ml.c6i.xlarge --dry-run",
        2,
        ["give --input"],
        {},
        None,
    ),
    (
        "deploy-headroom-out-of-range",
        "deploy {artifact} --instance ml.c6i.xlarge --bench-report {root}/report.json --slo-p99-ms 50 --headroom 2 --dry-run",
        2,
        ["--headroom must be a number above 0 and at most 1, got 2.0"],
        {},
        None,
    ),
    (
        "deploy-bench-report-measured-nothing",
        "deploy {artifact} --instance ml.c6i.xlarge --bench-report {root}/empty-report.json --slo-p99-ms 50 --dry-run",
        1,
        ["The bench report measured no run"],
        {},
        None,
    ),
    # a load setting the profile does not read: dropped without a word before
    (
        "bench-rate-on-a-synchronous-run",
        "bench --url http://127.0.0.1:9 --data {root}/data.jsonl --rate-type synchronous --rate 5",
        1,
        ["The synchronous profile does not read --rate (read by constant, poisson, find-max)"],
        {},
        None,
    ),
    (
        "bench-precision-without-find-max",
        "bench --url http://127.0.0.1:9 --data {root}/data.jsonl --precision 0.2",
        1,
        ["The sweep profile does not read --precision (read by find-max)"],
        {},
        None,
    ),
    (
        "compare-zero-concurrency",
        "compare {model} --instances ml.c6i.xlarge --concurrency 0",
        2,
        ["--concurrency must be a whole number of at least 1, got 0"],
        {},
        None,
    ),
    # a flag's value out of what it takes: a usage error (exit 2), as --metric-period 0 and --quota abc already were
    ("local-up-port-out-of-range", "local up --port 70000", 2, ["--port 70000 is not a TCP port"], {}, None),
    (
        "recommend-negative-rate",
        "recommend {root}/report.json --target-rps -1 --slo-p99-ms 100",
        1,
        ["The rate to serve must be above 0"],
        {},
        None,
    ),
    (
        "recommend-report-without-a-type",
        "recommend {root}/report.json --target-rps 10 --slo-p99-ms 100",
        1,
        ["does not say which instance type", "--instance TYPE"],
        {},
        None,
    ),
    (
        "openai-token-past-12-hours",
        "openai some-endpoint --expires 13h",
        1,
        ["lives at most 12 hours", "--expires between 1s and 12h"],
        {},
        None,
    ),
    (
        "evaluate-gate-out-of-range",
        "evaluate {root}/data.jsonl --model {model} --outputs {root}/data.jsonl --min-cosine 2",
        2,
        ["--min-cosine must be a number from -1 to 1, got 2.0"],
        {},
        None,
    ),
    (
        "compile-negative-max-abs-diff",
        "compile {model} -o {root}/never --target cpu --max-abs-diff -1",
        2,
        ["--max-abs-diff must be a number of at least 0, got -1.0"],
        {},
        None,
    ),
    (
        "logs-zero-lines",
        "logs enc --lines 0",
        2,
        ["--lines must be a whole number from 1 to 10,000", "got 0"],
        {},
        None,
    ),
    (
        "project-file-not-text",
        "--config {root}/weights.bin list",
        1,
        ["The project file", "is not text"],
        {},
        None,
    ),
    (
        "evaluate-outputs-not-json",
        "evaluate {root}/data.jsonl --model {model} --outputs {root}/bad.yaml",
        1,
        ["bad.yaml:1: not JSON", "Each line of the Batch Transform output is one JSON value"],
        {},
        None,
    ),
    (
        "compare-html-into-a-folder",
        "compare {model} --instances ml.c6i.xlarge --html {root}",
        2,
        ["--html", "is a folder", "report.html"],  # the example was report.json
        {},
        None,
    ),
    (
        "evaluate-without-candidate",
        "evaluate {root}/data.jsonl --model {model}",
        1,
        ["exactly one candidate"],
        {},
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_user_mistake_gets_a_clear_answer(world, case):
    name, args, code, needles, extra, stdin = case
    sock = busy_port() if "{busy}" in args else None
    fill = {
        "artifact": world["root"] / "artifact",
        "model": world["model"],
        "root": world["root"],
        "llama": world["llama"],
    }
    if sock:
        fill["busy"] = sock.getsockname()[1]
    before = _resources(world)
    try:
        env = _env(world, **{k: v.format(**fill) for k, v in extra.items()})
        argv = [a.format(**fill) for a in args.split()]
        if "PYTHONPATH" in extra:  # what is importable is fixed when a process starts: a process of its own
            out = subprocess.run(
                [*CLI, *argv], env=env, input=stdin, capture_output=True, text=True, timeout=180
            )
            returncode, said = out.returncode, out.stdout + out.stderr
        else:
            returncode, said = _run_in_process(argv, env, stdin)
    finally:
        if sock:
            sock.close()
    assert returncode == code, said[-2000:]
    assert "Traceback" not in said and "Unexpected error" not in said, said[-2000:]
    for needle in needles:
        assert needle in said, f"{needle!r} not in: {said[-1500:]}"
    assert _resources(world) == before, "the mistake left something behind in the embedded AWS"


def _run_in_process(argv: list[str], env: dict[str, str], stdin: str | None) -> tuple[int, str]:
    """The CLI's own entry point (``smneuron.cli.main.run``, its error policy and exit codes) in this process, with
    exactly ``env`` as the environment and ``stdin`` as standard input: what a user's shell gets, without paying a
    Python start-up per case (cases that change what is importable, and the test below, run the real executable)."""
    import contextlib
    import io

    from smneuron.cli.main import run

    saved_env, saved_stdin = dict(os.environ), sys.stdin
    out, err = io.StringIO(), io.StringIO()
    os.environ.clear()
    os.environ.update(env)
    sys.stdin = io.StringIO(stdin or "")
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                run(argv)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        sys.stdin = saved_stdin
    return code, out.getvalue() + err.getvalue()


def test_a_mistake_through_the_real_executable(world):
    """The matrix runs in process; this one case runs `python -m smneuron.cli.main` as a shell does."""
    out = subprocess.run([*CLI, "deploy", "nope.tar.gz", "--instance", "ml.inf2.xlarge"], env=_env(world),
                         capture_output=True, text=True, timeout=180)  # fmt: skip
    assert out.returncode == 1 and "Traceback" not in out.stderr and "nope.tar.gz" in out.stdout + out.stderr


def _resources(world) -> list:
    """What a mistake must never leave behind in the embedded AWS this worker's cases share (one session for
    them all: a new one loads botocore's service models again, a third of a second per case)."""
    from smneuron.session import Session

    if "session" not in world:
        world["session"] = Session.embedded(world["url"])
    sess = world["session"]
    sm = sess.client("sagemaker")
    return [
        sm.list_endpoints()["Endpoints"],
        sm.list_endpoint_configs()["EndpointConfigs"],
        sm.list_models()["Models"],
        sess.client("cloudwatch").describe_alarms()["MetricAlarms"],
    ]


def test_every_command_has_a_mistake_case():
    """A new command (or command group) comes with at least one mistake a user can make with it."""
    from smneuron.cli.table import COMMANDS

    commands = set(COMMANDS)  # the CLI's table: every command and command group `smneuron --help` lists
    assert len(commands) > 20
    covered = set()
    for _, args, *_ in CASES:
        words = [w for w in args.split() if not w.startswith("{")]
        while words and words[0].startswith("--"):  # global options before the command
            words = words[2:] if words[0] in ("--config", "--region", "--profile") else words[1:]
        covered |= set(words[:1])
    assert commands - covered == set(), "commands without a mistake case"


def test_images_names_the_text_generation_image_for_inf2(world):
    out = subprocess.run([*CLI, "images", "--instance", "ml.inf2.48xlarge", "--region", "eu-west-1"],
                         env=_env(world), capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "pytorch-inference-neuronx" in out.stdout and "huggingface-vllm-inference-neuronx" in out.stdout
    cpu = subprocess.run([*CLI, "images", "--instance", "ml.c6i.xlarge", "--region", "eu-west-1", "--json"],
                         env=_env(world), capture_output=True, text=True, timeout=120)  # fmt: skip
    assert json.loads(cpu.stdout)["text_generation_image_uri"] is None


def test_a_text_generation_dry_run_on_a_cpu_instance_says_one_number_of_copies(world, tiny_llama):
    """It said "2 copies" in the header and "copies = 1" below, with NeuronCore and HBM arithmetic for ml.c6i."""
    from smneuron.compilation.entry import compile_model

    compile_model(tiny_llama, world["root"] / "llm", target="cpu", batch_size=2, sequence_length=128)
    code, said = _run_in_process(
        ["deploy", str(world["root"] / "llm"), "--instance", "ml.c6i.xlarge", "--dry-run"], _env(world), None
    )
    assert code == 0, said
    assert "2 copies x tp 1" in said and "copies = 2 (one per 2 vCPUs of ml.c6i.xlarge)" in said
    assert "NeuronCore" not in said and "HBM" not in said and "2 vCPUs, " in said


def test_a_printed_command_gets_local_once_and_the_service_commands_none():
    from smneuron.cli import _common

    text = "`smneuron delete x`, `smneuron --local list`, `smneuron local up`, `smneuron.local.up()`"
    try:
        _common.local_by_flag(True)
        assert _common.as_typed(text) == (
            "`smneuron --local delete x`, `smneuron --local list`, `smneuron local up`, `smneuron.local.up()`"
        )
    finally:
        _common.local_by_flag(False)
    assert _common.as_typed(text) == text
