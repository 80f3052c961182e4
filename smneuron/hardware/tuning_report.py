"""`smneuron tune`'s report: the measured grid as table rows and as an HTML page with a plot (throughput against p99
under load), for a terminal, a notebook (``TuneResult._repr_html_``) or a file."""

from __future__ import annotations

import html
from typing import Any

from smneuron.display.cards import table_html

HEADERS = ["", "batch", "buckets", "req/s", "p50 ms", "p99 ms", "alone p50 ms", "$ / 1M"]


def rows(result: Any) -> tuple[list[str], list[list[Any]]]:
    """(headers, one row per candidate): the pick marked, a candidate that could not be served with its reason."""
    out = []
    for i, c in enumerate(result.candidates):
        mark = "pick" if i == result.pick else ""
        if c.failed:
            out.append([mark, c.batch_size, ",".join(map(str, c.buckets)), c.failed, "", "", "", ""])
            continue
        cost = f"{c.usd_per_1m:.3f}" if c.usd_per_1m is not None else "-"
        out.append([mark, c.batch_size, ",".join(map(str, c.buckets)), f"{c.rps:.1f}", f"{c.p50_ms:.1f}",
                    f"{c.p99_ms:.1f}", f"{c.alone_p50_ms:.1f}", cost])  # fmt: skip
    return HEADERS, out


def plot_svg(result: Any, width: int = 520, height: int = 300) -> str:
    """Throughput (x) against p99 under load (y), one labelled point per candidate; the pick filled."""
    measured = [c for c in result.candidates if not c.failed]
    if not measured:
        return ""
    top_x = max(c.rps for c in measured) * 1.15 or 1
    top_y = max(c.p99_ms for c in measured) * 1.15 or 1
    pad = 44
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-size="11">',
             f'<line x1="{pad}" y1="{height - pad}" x2="{width - 10}" y2="{height - pad}" stroke="#444"/>',
             f'<line x1="{pad}" y1="10" x2="{pad}" y2="{height - pad}" stroke="#444"/>',
             f'<text x="{width // 2}" y="{height - 10}">req/s at concurrency {result.concurrency}</text>',
             '<text x="4" y="20">p99 ms</text>']  # fmt: skip
    for c in measured:
        x = pad + (width - pad - 10) * c.rps / top_x
        y = height - pad - (height - pad - 10) * c.p99_ms / top_y
        fill = "#1f77b4" if c is result.picked else "white"
        label = html.escape(f"b{c.batch_size} {','.join(map(str, c.buckets))}")
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{fill}" stroke="#1f77b4"/>')
        parts.append(f'<text x="{x + 7:.1f}" y="{y - 6:.1f}">{label}</text>')
    return "".join(parts) + "</svg>"


def html_page(result: Any) -> str:
    """A self-contained page: what was tuned, the table, the plot, the pick and why (no script, no CDN)."""
    headers, body = rows(result)
    c = result.picked
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in result.notes)
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>smneuron tune</title></head>"
        "<body style='font-family:sans-serif'>"
        f"<h2>smneuron tune: {len(result.candidates)} layouts on {html.escape(result.target)}, served as "
        f"{html.escape(result.instance)}</h2>{table_html(headers, body)}<div>{plot_svg(result)}</div>"
        f"<p><b>pick</b>: batch {c.batch_size}, buckets {','.join(map(str, c.buckets))}: "
        f"{html.escape(result.criterion)}</p><ul>{notes}</ul></body></html>"
    )
