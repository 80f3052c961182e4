"""One table per verb: each setting a verb takes, declared once.

An ``Option`` says everything there is to say of one setting: its SDK keyword, its CLI flag, its type, its default,
its range, the model kind that owns it, its project-file key and its help. A setting that has a project-file key takes
its type, range, default and help from that key's field in ``specs.models`` (the schema of smneuron.yaml), so each is
written once. An ``Options`` table (``specs.deploy_settings.DEPLOY``, ``specs.bench_settings.BENCH``) makes of that:

- the typed request (``Options.model``: ``DeploySettings``, ``BenchRequest``), which ``parse`` builds from keywords and
  refuses, naming the setting as the user gave it (``--count`` on the command line, ``count=`` in Python): an unknown
  keyword (with the nearest), a wrong type, a number out of range, a setting that means nothing without another;
- the SDK's signature and the settings section of its docstring (``Options.signature``);
- the CLI's options (``cli.options.with_options``), the docs (``markdown``) and the schema's flags (``scripts/write_schema.py``).

May import: pydantic, the standard library, ``smneuron.errors`` and ``specs.validation``.
"""

from __future__ import annotations

import difflib
import inspect
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic import ValidationError as PydanticValidationError

from smneuron.errors import ConfigError, UsageError
from smneuron.specs.validation import FLAGS


@dataclass(frozen=True)
class Option:
    """One setting of one verb.

    ``flag`` is None for a setting only the project file gives; ``cli``/``sdk`` False keep it off one of the two ways
    in. ``kind`` ("encoder" or "text-generation") is the only model kind that takes it (None: both). ``needs`` names a
    keyword without which this one would shape nothing: given alone, it is refused rather than dropped.
    """

    keyword: str
    flag: str | None = None
    help: str = ""
    type: Any = None  # the SDK's type; None: the project-file key's
    default: Any = None  # what "not given" comes to, said in the help and the docs (None: nothing to say)
    least: float | None = None  # the least value allowed
    above: float | None = None  # the value it must be above
    most: float | None = None  # the most allowed
    kind: str | None = None
    key: str | None = None
    what: str = ""  # what it shapes, for the refusal of the other kind's settings
    short: str | None = None
    needs: str | None = None
    many: bool = False  # the flag may be repeated (a list on the command line)
    comma: bool = False  # on the command line, a list may also be comma-separated
    cli: bool = True
    sdk: bool = True
    hidden: bool = False

    @property
    def name(self) -> str:
        """The name a refusal and ``artifact.kind_settings.SETTINGS`` know it by: the project-file field's, else the
        keyword."""
        return self.key.rsplit(".", 1)[-1] if self.key else self.keyword

    @property
    def flags(self) -> tuple[str, ...]:
        """The CLI's declarations: ``("--count",)``, ``("--data-caching/--no-data-caching",)``, with the short one."""
        return tuple(f for f in (self.flag, self.short) if f)

    def label(self, where: str) -> str:
        """The setting as the user gave it: its flag on the command line, ``keyword=`` in Python, else its key."""
        if where == "cli" and self.flag and self.cli:
            return self.flag.split("/")[0]
        if where == "file" and self.key:
            return self.key
        return f"{self.keyword}=" if self.sdk or not self.key else self.key


@dataclass(frozen=True)
class Bounds:
    """A number's range, read once from the option or its project-file field."""

    least: float | None = None
    above: float | None = None
    most: float | None = None
    whole: bool = False

    def holds(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            return False
        if self.whole and value != int(value):
            return False
        low = (self.least is None or value >= self.least) and (self.above is None or value > self.above)
        return low and (self.most is None or value <= self.most)

    def words(self) -> str:
        """``a whole number of at least 1``, ``a number above 0 and at most 1``."""
        parts = []
        if self.least is not None:
            parts.append(f"of at least {self.least:g}" if self.most is None else f"from {self.least:g}")
        if self.above is not None:
            parts.append(f"above {self.above:g}")
        if self.most is not None:
            parts.append(f"to {self.most:g}" if self.least is not None else f"at most {self.most:g}")
        joined = " and ".join(parts) if self.above is not None and self.most is not None else " ".join(parts)
        return f"{'a whole number' if self.whole else 'a number'} {joined}".strip()

    @property
    def any(self) -> bool:
        return not (self.least is None and self.above is None and self.most is None)


def _bounds_of(option: Option, spec_field: Any, kind: Any) -> Bounds:
    """The option's own range, else its project-file field's (pydantic's Ge/Gt/Le)."""
    whole = kind is int
    if option.least is not None or option.above is not None or option.most is not None:
        return Bounds(option.least, option.above, option.most, whole)
    found: dict[str, float] = {}
    for item in getattr(spec_field, "metadata", []) if spec_field is not None else []:
        for attr in ("ge", "gt", "le"):
            if getattr(item, attr, None) is not None:
                found[attr] = getattr(item, attr)
    return Bounds(found.get("ge"), found.get("gt"), found.get("le"), whole)


def _plain(annotation: Any) -> Any:
    """``int | None`` -> int; a Literal or list stays as it is."""
    if get_origin(annotation) in (Union, type(int | None)):
        inner = [a for a in get_args(annotation) if a is not type(None)]
        return inner[0] if len(inner) == 1 else annotation
    return annotation


class Request(BaseModel):
    """A verb's typed request: each setting given, or None for "not given" (its default applies where it is used)."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    def given(self) -> dict[str, Any]:
        """The settings given (keyword -> value), in the table's order."""
        return {k: v for k, v in self.__dict__.items() if v is not None}


class Options:
    """One verb's table of settings (see the module's docstring)."""

    def __init__(
        self, verb: str, options: Iterable[Option], *, model: str, fields: Callable[[str], Any] | None = None
    ):
        """``fields``: the project-file field of a key (``specs.models.field_at``), read for the keyed settings."""
        self.verb = verb
        self.options: dict[str, Option] = {}
        for o in options:
            if o.keyword in self.options:
                raise ValueError(f"{verb}: {o.keyword} is declared twice")
            self.options[o.keyword] = o
        self._fields = fields
        self._model_name = model
        self._model: type[Request] | None = None
        for o in self.options.values():  # a spec's own refusals (max below min) name the flag too
            if o.key and o.flag and o.cli:
                FLAGS.setdefault(o.name, o.label("cli"))

    def __iter__(self) -> Iterator[Option]:
        return iter(self.options.values())

    def __getitem__(self, keyword: str) -> Option:
        return self.options[keyword]

    def __contains__(self, keyword: object) -> bool:
        return keyword in self.options

    def spec_field(self, option: Option) -> Any:
        """The project-file field behind a keyed option (None without one)."""
        return self._fields(option.key) if option.key and self._fields else None

    def type_of(self, option: Option) -> Any:
        """The option's type: its own, else its project-file field's (without the ``| None``)."""
        if option.type is not None:
            return option.type
        spec_field = self.spec_field(option)
        return _plain(spec_field.annotation) if spec_field is not None else str

    def bounds(self, option: Option) -> Bounds:
        kind = self.type_of(option)
        kind = (
            get_args(kind)[0] if get_origin(kind) is list and get_args(kind) else kind
        )  # a list: each value's
        return _bounds_of(option, None if option.type is not None else self.spec_field(option), kind)

    def default_of(self, option: Option) -> Any:
        """What not giving the setting comes to: the option's word for it, else its project-file field's default."""
        if option.default is not None:
            return option.default
        spec_field = self.spec_field(option)
        if spec_field is None or spec_field.is_required():
            return None
        value = spec_field.get_default(call_default_factory=True)
        return value if value not in ({}, [], None) else None

    def help_of(self, option: Option) -> str:
        """The help: the option's, else its project-file field's description; with the default when there is one."""
        spec_field = self.spec_field(option)
        text = option.help or (spec_field.description if spec_field is not None else "") or ""
        default = self.default_of(option)
        if default is not None and "(default" not in text and not isinstance(default, bool):
            shown = ",".join(map(str, default)) if isinstance(default, list) else default
            text = f"{text.rstrip('.')} (default {shown})."
        return text

    @property
    def model(self) -> type[Request]:
        """The typed request: one optional field per setting, with the setting's type."""
        if self._model is None:
            fields = {
                o.keyword: (self.type_of(o) | None, Field(None, description=self.help_of(o))) for o in self
            }
            self._model = create_model(self._model_name, __base__=Request, **fields)  # type: ignore[call-overload]
            self._model.__doc__ = (
                f"The typed request of `{self.verb}`: each setting of ``{self.verb}``'s table."
            )
        return self._model

    def parse(self, values: Mapping[str, Any] | Request | None, *, where: str = "sdk") -> Request:
        """The typed request from keywords (None: not given), refused in the user's words.

        Raises:
            ConfigError: an unknown keyword (with the nearest known one).
            UsageError: a value of the wrong type or out of range; a setting given without the one it needs.
        """
        if isinstance(values, Request):
            return values
        given = {k: v for k, v in (values or {}).items() if v is not None}
        self._check_known(given, where)
        try:
            request = self.model.model_validate(given)
        except PydanticValidationError as e:
            first = e.errors()[0]
            option = self.options[str(first["loc"][0])]
            words = _type_words(self.type_of(option), first)
            raise UsageError(
                f"{option.label(where)} {words}, got {values_given(given, option)!r}.",
                hint=self._hint(option, where, choice=first["type"] == "literal_error"),
            ) from None
        for keyword, value in request.given().items():
            self._check_range(self.options[keyword], value, where)
        self._check_needs(request.given(), where)
        return request

    def _check_known(self, given: Mapping[str, Any], where: str) -> None:
        way_in = (
            "cli" if where == "cli" else "sdk"
        )  # the CLI's own settings (its outputs) come only from flags
        unknown = [k for k in given if k not in self.options or not getattr(self.options[k], way_in)]
        if not unknown:
            return
        known = [o.keyword for o in self if o.sdk]
        near = difflib.get_close_matches(unknown[0], known, n=1)
        raise ConfigError(
            f"Unknown {self.verb} setting(s): {', '.join(sorted(unknown))}."
            + (f" Did you mean {near[0]}?" if near else ""),
            hint=f"Use {', '.join(known)}.",
        )

    def _check_range(self, option: Option, value: Any, where: str) -> None:
        bounds = self.bounds(option)
        if not bounds.any:
            return
        for one in value if isinstance(value, list | tuple) else [value]:
            if not bounds.holds(one):
                raise UsageError(
                    f"{option.label(where)} must be {bounds.words()}, got {one!r}.",
                    hint=self._hint(option, where),
                )

    def _hint(self, option: Option, where: str, *, choice: bool = False) -> str:
        default = self.default_of(option)
        leave = f" for its default ({default})" if default is not None else " for its default"
        if choice:
            return f"Use one of them, or leave {option.label(where)} out{leave}."
        return f"Give {option.label(where)} a value in range, or leave it out{leave}."

    def _check_needs(self, given: Mapping[str, Any], where: str) -> None:
        for keyword in given:
            needs = self.options[keyword].needs
            if needs and needs not in given:
                other = self.options[needs]
                raise UsageError(
                    f"{self.options[keyword].label(where)} needs {other.label(where)} "
                    f"({self.help_of(other).rstrip('.')}); given alone, it would shape nothing.",
                    hint=f"Add {other.label(where)}, or leave {self.options[keyword].label(where)} out.",
                )

    def signature(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Give ``fn`` (which takes ``**settings``) the table's keywords in its signature and docstring: what
        ``help()``, Jupyter and the docs show. ``fn`` still takes them as ``**settings`` and parses them here."""
        sig = inspect.signature(fn)
        fixed = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        named = {p.name for p in fixed}
        extra = [
            inspect.Parameter(
                o.keyword, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=self.type_of(o) | None
            )
            for o in self
            if o.sdk and o.keyword not in named
        ]
        fn.__signature__ = sig.replace(parameters=[*fixed, *extra])  # type: ignore[attr-defined]
        fn.__doc__ = (
            (fn.__doc__ or "")
            + "\n\n    Settings (keyword: meaning):\n"
            + "\n".join(
                f"        {o.keyword}: {self.help_of(o)}{_owner(o)}"
                for o in self
                if o.sdk and o.keyword not in named
            )
        )
        return fn

    def markdown(self) -> str:
        """The table as the docs show it: flag, keyword, project-file key, kind, type, range, default, help."""
        rows = [
            f"| {o.flag or '-'} | `{o.keyword}` | {('`' + o.key + '`') if o.key else '-'} | {o.kind or 'both'} | "
            f"{_type_name(self.type_of(o))} | {self.bounds(o).words() if self.bounds(o).any else '-'} | "
            f"{self.default_of(o) if self.default_of(o) is not None else '-'} | {self.help_of(o)} |"
            for o in self
            if o.sdk or o.cli
        ]
        head = "| flag | keyword | smneuron.yaml | kind | type | range | default | what it does |\n|---|---|---|---|---|---|---|---|"
        return f"### `smneuron {self.verb}`\n\n{head}\n" + "\n".join(rows) + "\n"


def values_given(given: Mapping[str, Any], option: Option) -> Any:
    """The value the user gave for ``option`` (a list whole, not its first bad element)."""
    return given.get(option.keyword)


def _owner(option: Option) -> str:
    return f" ({option.kind} only)" if option.kind else ""


def _type_name(kind: Any) -> str:
    if kind is Any:
        return "text"
    if kind in (int, float, str, bool):
        return {int: "whole number", float: "number", str: "text", bool: "true/false"}[kind]
    if kind is Path:
        return "path"
    if get_origin(kind) is list:
        inner = _type_name(get_args(kind)[0])
        return f"list of {inner}s" if inner.endswith(("number", "value")) else f"list of {inner}"
    if get_origin(kind) is dict:
        return "KEY=VALUE pairs"
    args = get_args(kind)
    return " / ".join(map(str, args)) if args else getattr(kind, "__name__", str(kind))


def _type_words(kind: Any, error: Mapping[str, Any]) -> str:
    """What a value of the wrong type should have been."""
    if error["type"] == "literal_error":
        return f"must be one of {error.get('ctx', {}).get('expected')}"
    return f"must be {'a ' if kind in (int, float) or get_origin(kind) is list else ''}{_type_name(kind)}"
