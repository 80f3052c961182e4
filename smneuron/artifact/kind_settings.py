"""Which setting belongs to which model kind, said once: the flag, project-file key, SDK keyword and purpose of every
setting only one kind uses (deploy, bench and evaluate), and which kind owns it. ``artifact.kind``'s strategy refuses
the other kind's settings from these tables, naming each the way the user gave it.

May import: the standard library, the verbs' tables (``specs``), ``artifact.kind``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from smneuron.artifact.kind import ENCODER, GENERATION, OTHER, ModelKind
from smneuron.errors import ConfigError
from smneuron.specs.bench_settings import BENCH
from smneuron.specs.deploy_settings import DEPLOY
from smneuron.specs.evaluate_settings import EVALUATE
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
# evaluate settings (`smneuron evaluate`, `smneuron.evaluate`): each kind's gates and candidates; its table says which
EVALUATE_SETTINGS: dict[str, Setting] = _owned(EVALUATE)
for _table in (BENCH_SETTINGS, EVALUATE_SETTINGS):  # a name deploy knows keeps deploy's flag and key
    SETTINGS.update({name: setting for name, setting in _table.items() if name not in SETTINGS})
_SCOPES = {"deploy": DEPLOY_SETTINGS, "bench": BENCH_SETTINGS, "evaluate": EVALUATE_SETTINGS}

# which kind owns each setting, said once in the verbs' tables
_GENERATION_SETTINGS = tuple(
    dict.fromkeys(o.name for table in (DEPLOY, BENCH, EVALUATE) for o in table if o.kind == "text-generation")
)
_ENCODER_SETTINGS = tuple(n for n in SETTINGS if n not in _GENERATION_SETTINGS)
# each kind's own
OWNED: dict[ModelKind, tuple[str, ...]] = {GENERATION: _GENERATION_SETTINGS, ENCODER: _ENCODER_SETTINGS}


def refuse_foreign(
    kind: ModelKind, given: Mapping[str, str], *, where: str = "cli", scope: str = "deploy"
) -> None:
    """Refuse any setting of the kind other than ``kind`` that was given, naming each the way the user gave it.

    Args:
        given: setting name (a key of ``SETTINGS``) -> where it came from ("flag" for the command line or an
            SDK keyword, else the project file's path).
        where: "cli" names flags (``--copies``), "sdk" names keywords (``copies=``).
        scope: "deploy" (deploy, preview, serve), "bench" or "evaluate": which of the kind's own settings the hint
            lists.

    Raises:
        ConfigError: one or more settings belong to the other kind; none is dropped silently.
    """
    foreign = [name for name in given if name in SETTINGS and name not in OWNED[kind]]
    if not foreign:
        return
    said = []
    for name in foreign:
        s = SETTINGS[name]
        label = s.key if given[name] != "flag" else (s.flag if where == "cli" else f"{s.keyword}=")
        said.append(f"{label} ({s.what})")
    scoped = _SCOPES[scope]  # the verb's table, in its order
    own = [s for n, s in scoped.items() if n in OWNED[kind] and s.flag.startswith("--")]
    mine = ", ".join((s.flag if where == "cli" else f"{s.keyword}=") for s in own[:6])
    raise ConfigError(
        f"This is {kind.a_title} {'model' if scope == 'deploy' else 'endpoint'}, served "
        f"{kind.serves_with}; these settings are for {OTHER[kind].title} endpoints and would be ignored: "
        + "; ".join(said)
        + ".",
        hint=f"Remove them (from the command line, the SDK call or smneuron.yaml). {kind.title.capitalize()} "
        f"{_SCOPE_NOUN.get(scope, 'endpoints')} take {mine}.",
    )
