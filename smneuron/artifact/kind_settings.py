"""Which setting belongs to which model kind, said once: the flag, project-file key, SDK keyword and purpose of every
setting only one kind uses (deploy, bench and evaluate), and which kind owns it. ``artifact.kind``'s strategy refuses
the other kind's settings from these tables, naming each the way the user gave it.

May import: the standard library, the verbs' tables (``specs``).
"""

from __future__ import annotations

from typing import NamedTuple

from smneuron.specs.bench_settings import BENCH
from smneuron.specs.deploy_settings import DEPLOY
from smneuron.specs.options import Option, Options


class Setting(NamedTuple):
    """A setting only one kind uses: its CLI flag, its project-file key, its SDK keyword, and what it does."""

    flag: str
    key: str
    keyword: str
    what: str


_SCOPE_NOUN = {"bench": "benchmarks", "evaluate": "evaluations"}


def _owned(table: Options) -> dict[str, Setting]:
    """A verb table's settings that one kind owns, by the name a refusal knows them by."""
    return {
        o.name: Setting(_flag(table, o), o.key or o.label("cli"), o.keyword, o.what) for o in table if o.kind
    }


def _flag(table: Options, option: Option) -> str:
    """The flag a user types to give the setting (a switch that is on by default: its ``--no-`` side); its project-file
    key when it has no flag."""
    if not option.flag:
        return option.key or option.keyword
    on, _, off = option.flag.partition("/")
    return off if off and table.default_of(option) is True else on


# Every setting that belongs to one kind only. The key is the name the request resolver and the refusal use.
DEPLOY_SETTINGS: dict[str, Setting] = _owned(DEPLOY)  # deploy's: its table says which kind owns each
SETTINGS: dict[str, Setting] = dict(DEPLOY_SETTINGS)

# bench settings (`smneuron bench`, `smneuron.bench`): what the load is made of differs by kind; its table says which
BENCH_SETTINGS: dict[str, Setting] = _owned(BENCH)
# evaluate settings (`smneuron evaluate`, `smneuron.evaluate`): each kind's gates and where its candidate comes from
EVALUATE_SETTINGS: dict[str, Setting] = {
    "min_top1_agreement": Setting(
        "--min-top1-agreement",
        "pipeline.thresholds.min_top1_agreement",
        "min_top1_agreement",
        "a classification gate",
    ),
    "min_cosine": Setting(
        "--min-cosine", "pipeline.thresholds.min_cosine", "min_cosine", "an embeddings gate"
    ),
    "min_accuracy": Setting(
        "--min-accuracy", "pipeline.thresholds.min_accuracy", "min_accuracy", "accuracy against labels"
    ),
    "max_abs_diff": Setting(
        "--max-abs-diff", "pipeline.thresholds.max_abs_diff", "max_abs_diff", "the largest output difference"
    ),
    "reference": Setting("--reference", "-", "reference", "reference outputs computed before"),
    "package": Setting("--package", "-", "package", "a cpu model.tar.gz served locally"),
    "outputs": Setting("--outputs", "-", "outputs", "a Batch Transform .out file"),
    "min_logit_match": Setting(
        "--min-logit-match",
        "pipeline.generation_thresholds.min_logit_match",
        "min_logit_match",
        "Neuron's logit matching",
    ),
    "min_bhattacharyya": Setting(
        "--min-bhattacharyya",
        "pipeline.generation_thresholds.min_bhattacharyya",
        "min_bhattacharyya",
        "the Bhattacharyya similarity",
    ),
    "min_task_exact_match": Setting(
        "--min-task-exact-match",
        "pipeline.generation_thresholds.min_task_exact_match",
        "min_task_exact_match",
        "the task score against labels",
    ),
    "component": Setting("--component", "-", "component", "an endpoint's inference component"),
}
for _table in (BENCH_SETTINGS, EVALUATE_SETTINGS):  # a name deploy knows keeps deploy's flag and key
    SETTINGS.update({name: setting for name, setting in _table.items() if name not in SETTINGS})
_SCOPES = {"deploy": DEPLOY_SETTINGS, "bench": BENCH_SETTINGS, "evaluate": EVALUATE_SETTINGS}

# which kind owns each setting, said once: deploy's and bench's in their tables; of evaluate's, text generation's are
# listed, every other one is an encoder's
_GENERATION_SETTINGS = tuple(
    dict.fromkeys(
        [
            *(o.name for table in (DEPLOY, BENCH) for o in table if o.kind == "text-generation"),
            *("min_logit_match", "min_bhattacharyya", "min_task_exact_match", "component"),
        ]
    )
)
_ENCODER_SETTINGS = tuple(n for n in SETTINGS if n not in _GENERATION_SETTINGS)
