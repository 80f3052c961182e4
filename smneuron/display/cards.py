"""Short reprs for notebooks: a one-line ``__repr__`` and an HTML card (``_repr_html_``).

A class mixes in ``Displayed`` and says what it is in ``_card()``: a title, a one-line brief, label/value rows,
optionally a table and extra HTML (an inline plot). Dataclasses that mix it in are declared ``repr=False`` so
the generated field dump does not replace the short repr.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from typing import Any

_STYLE = (
    "font-family:system-ui,sans-serif;font-size:13px;border:1px solid #ccd;border-radius:6px;"
    "padding:8px 12px;display:inline-block;max-width:100%"
)


@dataclass
class Card:
    """What a notebook shows for one object."""

    title: str
    brief: str  # the __repr__ inside the parentheses
    rows: list[tuple[str, Any]] = field(default_factory=list)
    table: tuple[list[str], list[list[Any]]] | None = None
    extra_html: str = ""
    link: tuple[str, str] | None = None  # (text, url)


class Displayed:
    """Mixin: ``__repr__`` and ``_repr_html_`` from ``_card()``."""

    def _card(self) -> Card:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._card().brief})"

    def _repr_html_(self) -> str:
        return render(self._card())


def render(card: Card) -> str:
    """The card as one self-contained HTML fragment (no scripts, no outside resources)."""
    e = html.escape
    parts = [f'<div class="smneuron-card" style="{_STYLE}">', f"<b>{e(card.title)}</b>"]
    if card.rows:
        parts.append('<table style="border-collapse:collapse;margin-top:4px">')
        for label, value in card.rows:
            parts.append(
                f'<tr><td style="color:#667;padding:1px 12px 1px 0;text-align:left">{e(label)}</td>'
                f'<td style="text-align:left;font-family:monospace">{e(_text(value))}</td></tr>'
            )
        parts.append("</table>")
    if card.table:
        parts.append(table_html(*card.table))
    if card.link:
        text, url = card.link
        parts.append(f'<div style="margin-top:4px"><a href="{e(url)}" target="_blank">{e(text)}</a></div>')
    parts.append(card.extra_html)
    parts.append("</div>")
    return "".join(parts)


def table_html(headers: list[str], rows: list[list[Any]]) -> str:
    e = html.escape
    head = "".join(f'<th style="padding:2px 8px;text-align:right">{e(h)}</th>' for h in headers)
    body = "".join(
        "<tr>"
        + "".join(f'<td style="padding:2px 8px;text-align:right">{e(_text(v))}</td>' for v in row)
        + "</tr>"
        for row in rows
    )
    return f'<table style="border-collapse:collapse;margin-top:6px"><tr>{head}</tr>{body}</table>'


def png_html(png: bytes, alt: str) -> str:
    """An inline PNG (a bench plot) that needs no file next to the notebook."""
    data = base64.b64encode(png).decode()
    return (
        f'<div><img alt="{html.escape(alt)}" style="max-width:100%" src="data:image/png;base64,{data}"></div>'
    )


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def short_hash(sha256: str) -> str:
    return sha256[:12]


def size(n: int) -> str:
    for scale, name in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if n >= scale:
            return f"{n / scale:.1f} {name}"
    return f"{n} B"


def money(usd: float | None, per: str = "h") -> str:
    return "price unknown" if usd is None else f"${usd:,.3f}/{per}"
