"""What every command module shares: global options, the session, the project file, output.

Imported at start-up (the root callback builds ``CliState``), so it imports typer alone: the session, the
project file's schema and rich load when a command first asks for them.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from smneuron.session import Session
    from smneuron.specs.models import ProjectFile

JsonOpt = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables.")


@dataclass
class CliState:
    region: str | None = None
    profile: str | None = None
    endpoint_url: str | None = None
    config: Path | None = None
    local: bool = False
    _project: ProjectFile | None = field(default=None, repr=False)
    _session: Session | None = field(default=None, repr=False)

    def project(self) -> ProjectFile:
        """The project file (``--config`` or the nearest ``smneuron.yaml``), or defaults."""
        from smneuron.specs.models import ProjectFile, find_project_file

        if self._project is None:
            path = self.config or find_project_file()
            self._project = ProjectFile.load(path) if path else ProjectFile()
        return self._project

    def session(self, *, offline: bool = False, **overrides: Any) -> Session:
        """The AWS session: flags > project file > environment.

        ``offline``: for commands that create nothing; missing credentials are fine and an unknown
        account shows as ``<account-id>`` (set SMNEURON_ACCOUNT to fill it in).
        """
        from smneuron.files.local_record import local_environment, require_local_service
        from smneuron.session import Session

        if self._session is None or overrides or offline:
            aws = self.project().aws
            if (
                self.local
            ):  # the processes this command starts (SDKs, jobs) find the embedded service's credentials
                env = local_environment(require_local_service())
                os.environ.update(
                    {k: v for k, v in env.items() if k.startswith("AWS_") and k != "AWS_REGION"}
                )
            self._session = Session.from_env(
                local=True
                if self.local
                else None,  # the embedded SageMaker: Session.from_env decides it, as the SDK
                # --local: the embedded service's URL and region (LOCAL_REGION unless --region), not the project's AWS
                region=self.region if self.local else (self.region or aws.region),
                profile=self.profile or aws.profile,
                endpoint_url=None if self.local else (self.endpoint_url or aws.endpoint_url),
                role=overrides.get("role") or aws.role,
                bucket=overrides.get("bucket") or aws.bucket,
                kms_key_id=overrides.get("kms_key_id") or aws.kms_key_id,
                prefix=aws.prefix,
                offline=offline,
                prices=self.project().prices,
            )
        return self._session


def state(ctx: typer.Context) -> CliState:
    obj = ctx.find_root().obj
    if obj is None:
        obj = ctx.find_root().obj = CliState()
    return obj


# A command the CLI prints (a hint, a next step) is one to paste as it is. Where this run's AWS is the embedded
# SageMaker because of --local (not SMNEURON_LOCAL=1 in the shell), each `smneuron VERB ...` it prints carries --local
# too: pasted without it, `smneuron delete NAME` acts on the account the shell's credentials reach.
_COMMAND = re.compile(r"`smneuron (?!--local |local )")
_local_by_flag = False


def local_by_flag(on: bool) -> None:
    """This run reaches the embedded SageMaker because of --local (the root callback says so, once)."""
    global _local_by_flag
    _local_by_flag = on


def as_typed(text: str) -> str:
    """``text`` with each `smneuron ...` command in it as the user must type it in this shell (``--local``)."""
    return _COMMAND.sub("`smneuron --local ", text) if _local_by_flag else text


_console: Console | None = None


def console() -> Console:
    global _console
    from rich.console import Console

    if _console is None:

        class _Typed(Console):  # the commands it prints as they are typed here (``as_typed``)
            def print(self, *objects: Any, **kwargs: Any) -> None:
                super().print(*(as_typed(o) if isinstance(o, str) else o for o in objects), **kwargs)

        # pipes and CI get a wide console so tables are not truncated to 80 columns. No markup unless a line asks for it
        # (``markup=True``, its values through ``shown``): a path, an S3 key or a model's answer holds brackets, which
        # rich took for its tags (a package written to out[v2]/ was printed as out/, and a folder named [/b] ended a
        # command that had done its work with "Unexpected error: MarkupError")
        _console = _Typed(highlight=False, markup=False, width=None if sys.stdout.isatty() else 160)
    return _console


def shown(value: Any) -> str:
    """``value`` as text inside a line printed with ``markup=True``: its brackets printed as they are."""
    from rich.markup import escape

    return escape(str(value))


def plan_heading(what: str, notes: list[str]) -> None:
    """A deploy plan's first line, ``what`` with its values through ``shown``, and its notes (each kind's renderer)."""
    c = console()
    c.print(f"[bold]Plan[/bold] (nothing is created): {what}", markup=True)
    for note in notes:
        c.print(f"note: {note}")


def not_empty(value: Any, flag: str) -> Any:
    """A flag's value, refused when it is given empty (``--role ''``, ``--security-group ,``): an unset shell
    variable (``--role "$ROLE"``) meant "not given", and the command went on with the default without a word."""
    blank = (value,) if isinstance(value, str) else value if isinstance(value, list) else ()
    if value is not None and (value == [] or any(isinstance(v, str) and not v.strip() for v in blank)):
        raise typer.BadParameter(
            "an empty value was given; give one, or leave the flag out for its default.", param_hint=flag
        )
    return value


def print_json(data: Any, *, compact_numbers: bool = False) -> None:
    """Indented JSON on stdout; ``compact_numbers`` keeps each list of numbers on one line (an embedding is one
    line, not 384)."""
    text = json.dumps(data, indent=2, default=str)
    if compact_numbers:
        text = _NUMBER_LIST.sub(
            lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text
        )
    sys.stdout.write(text + "\n")


_NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_NUMBER_LIST = re.compile(rf"\[\s*({_NUMBER}(?:,\s*{_NUMBER})*)\s*\]")


def table(title: str | None, columns: list[str], rows: list[list[Any]], *, numeric: bool = True) -> None:
    """A rich table; ``numeric`` right-aligns every column but the first (use False for text)."""
    from rich.table import Table

    # as wide as its title at least: a narrow table's title was folded onto a line of its own ("..., 5" / "records")
    t = Table(title=title, title_justify="left", min_width=len(title) if title else None)
    # the first column names the row (instance type, endpoint, variable): never cut; others fold
    first = max([len(str(r[0])) for r in rows if r] + [len(columns[0]) if columns else 0])
    for i, c in enumerate(columns):
        justify = "right" if numeric and i else "left"
        if i == 0:
            t.add_column(c, justify=justify, no_wrap=True, min_width=first)
        else:
            t.add_column(c, justify=justify, overflow="fold")
    for r in rows:
        t.add_row(*["" if v is None else str(v) for v in r])
    console().print(t)


def pairs(values: list[str] | None, flag: str, shape: str, convert):  # type: ignore[no-untyped-def]
    """``KEY=VALUE`` options (repeated) as a dict, each value converted; None when none was given."""
    out = {}
    for value in values or []:
        key, sep, raw = value.partition("=")
        try:
            if not (sep and key and raw):
                raise ValueError
            out[key.strip()] = convert(raw.strip())
        except ValueError:
            raise typer.BadParameter(f"{value!r}: give {shape}.", param_hint=flag) from None
    return out or None


def whole_numbers(text: str | None, flag: str) -> list[int] | None:
    """``"1,4,8"`` -> [1, 4, 8]; None when not given; a usage error (exit 2) naming ``flag`` otherwise."""
    if not text:
        return None
    try:
        return [int(c) for c in text.split(",")]
    except ValueError:
        raise typer.BadParameter(f"{text!r}: give whole numbers, e.g. 1,4,8.", param_hint=flag) from None


# a file name to suggest when a folder is named where a file goes, by what the flag writes (`--html /tmp` was told
# "e.g. --html /tmp/report.json")
_EXAMPLE_FILES = {"--html": "report.html", "--plot": "plot.png", "--csv": "report.csv"}


def outputs_checked(files: dict[str, Path | None], folders: dict[str, Path | None] | None = None) -> None:
    """Each output flag given (flag -> path), checked before the work that fills it (``smneuron.files.user``): a
    folder named where a file goes, or a place that cannot take a new file, is a usage error (exit 2) naming the flag,
    said before a benchmark runs rather than after it."""
    from smneuron.files.user import dir_to_write, file_to_write

    for flag, path in files.items():
        if path is not None:
            file_to_write(path, flag, example=_EXAMPLE_FILES.get(flag, "report.json"))
    for flag, path in (folders or {}).items():
        if path is not None:
            dir_to_write(path, flag)
