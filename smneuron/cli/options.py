"""A command's options from its verb's table (``specs.options``): one typer option per setting, its help and default
from the table, so the flags, the SDK keywords and the project file never say a setting twice.

``with_options(DEPLOY)`` wraps ``def deploy_cmd(ctx, artifact, ..., **settings)``: typer sees the table's flags in
the signature; the command gets the settings given (keyword -> value, converted to the SDK's types: ``--env K=V`` a
dict, ``--subnet a,b`` a list), which it hands to the SDK's one request (``Options.parse`` refuses them there, naming
the flags).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, get_origin

import typer

from smneuron.cli._common import not_empty
from smneuron.specs.options import Option, Options


def _cli_type(table: Options, option: Option) -> Any:
    """What typer parses: a list of words for lists and KEY=VALUE pairs, text for a choice, else the type itself."""
    kind = table.type_of(option)
    if option.many or get_origin(kind) in (list, dict):
        return list[str]
    return kind if kind in (int, float, bool, str, Path) else str


def _parameter(table: Options, option: Option) -> inspect.Parameter:
    annotation = _cli_type(table, option)
    info = typer.Option(None, *option.flags, help=table.help_of(option), hidden=option.hidden)
    return inspect.Parameter(
        option.keyword, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation
    )


def _converted(table: Options, option: Option, value: Any) -> Any:
    """A flag's value as the SDK takes it (None: not given)."""
    if value is None or value == []:
        return None
    if get_origin(table.type_of(option)) is dict:
        return _pairs(value, option.flags[0])
    if option.comma:
        return not_empty([v.strip() for item in value for v in item.split(",") if v.strip()], option.flags[0])
    return not_empty(value, option.flags[0])


def _pairs(values: list[str], flag: str) -> dict[str, str]:
    """``KEY=VALUE`` flags (repeated) as a dict; a usage error (exit 2) naming the flag otherwise."""
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"{item!r} is not KEY=VALUE (e.g. {flag} NAME=value).", param_hint=flag)
        out[key.strip()] = value
    return out


def with_options(table: Options, *, only: Iterable[str] | None = None) -> Callable[[Callable], Callable]:
    """Decorate a command that takes ``**settings``: its signature gains the table's CLI options (``only``: these
    keywords), and it is called with the settings given, as the SDK takes them."""
    keep = set(only) if only is not None else None
    chosen = [o for o in table if o.cli and o.flag and (keep is None or o.keyword in keep)]

    def wrap(fn: Callable) -> Callable:
        sig = inspect.signature(fn, eval_str=True)
        fixed = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        added = [_parameter(table, o) for o in chosen]

        @functools.wraps(fn)
        def command(**values: Any) -> Any:
            settings = {o.keyword: _converted(table, o, values.pop(o.keyword, None)) for o in chosen}
            return fn(**values, **{k: v for k, v in settings.items() if v is not None})

        command.__signature__ = sig.replace(parameters=[*fixed, *added])  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in [*fixed, *added]}
        return command

    return wrap
