"""Sequence buckets placed on the user's own texts (`smneuron compile --data texts.jsonl`, issue 63 #2).

A sample of the texts (the format `bench --data` takes: a text, or {"inputs": text | [text, pair]}, per line) is
tokenized with the model's own tokenizer (special tokens included, as the served request is), and buckets go at the
median, the 90th percentile and the longest length, each rounded up to a multiple of 16 and capped at the model's
positions. What each bucket serves and how much padding the choice saves against one bucket of the longest are said.

May import: smneuron.errors, smneuron.files; the tokenizers library.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from smneuron.errors import ConfigError
from smneuron.files.user import read_text

SAMPLE = 2000  # texts tokenized: enough for the 90th percentile to hold, quick on any machine
QUANTILES = (0.5, 0.9, 1.0)
STEP = 16


def texts_of(path: Path) -> list[str | tuple[str, str]]:
    """The texts of a JSON Lines file (a text, or {"inputs": text | [text, pair] | [texts]} per line).

    Raises:
        ConfigError: a line that is not JSON or not one of those, named by its number; a file with no text.
    """
    out: list[str | tuple[str, str]] = []
    for n, line in enumerate(read_text(path, "the texts").splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError as e:
            raise ConfigError(
                f"{path}:{n}: not JSON ({e}).", hint='Each line: "text" or {"inputs": "text"}.'
            ) from None
        inner = doc.get("inputs") if isinstance(doc, dict) else doc
        if isinstance(inner, str):
            out.append(inner)
        elif isinstance(inner, list) and len(inner) == 2 and all(isinstance(t, str) for t in inner):
            out.append((inner[0], inner[1]))
        elif isinstance(inner, list) and inner and all(isinstance(t, str) for t in inner):
            out.extend(inner)
        else:
            raise ConfigError(
                f"{path}:{n}: no text in it ({line[:80]!r}).", hint='Each line: "text" or {"inputs": "text"}.'
            )
    if not out:
        raise ConfigError(
            f"{path} holds no text.", hint='Give a JSON Lines file: "text" or {"inputs": "text"} per line.'
        )
    return out


def _tokenizer(model: Path):  # type: ignore[no-untyped-def]
    """The model's fast tokenizer (tokenizer.json), counting as the served request is tokenized (no padding, no
    truncation: the lengths are the texts' own).

    Raises:
        ConfigError: the model has no tokenizer.json.
    """
    from tokenizers import Tokenizer

    file = model / "tokenizer.json"
    if not file.is_file():
        raise ConfigError(f"No tokenizer.json in {model}: --data counts your texts' tokens with the model's tokenizer.",
                          hint="Save the model with its fast tokenizer (save_pretrained), or give --buckets.")  # fmt: skip
    tok = Tokenizer.from_file(str(file))
    tok.no_padding()
    tok.no_truncation()
    return tok


def from_data(model: Path, path: Path, limit: int) -> tuple[list[int], str]:
    """Buckets for the texts of ``path`` tokenized by ``model``'s tokenizer, capped at ``limit`` positions; and the
    choice in words (what each serves, the padding saved, the texts too long for the model)."""
    tokenizer = _tokenizer(model)
    texts = texts_of(path)[:SAMPLE]
    lengths = sorted(
        len(tokenizer.encode(*t).ids if isinstance(t, tuple) else tokenizer.encode(t).ids) for t in texts
    )
    at = [lengths[min(len(lengths) - 1, math.ceil(q * len(lengths)) - 1)] for q in QUANTILES]
    buckets = sorted({min(limit, max(STEP, math.ceil(n / STEP) * STEP)) for n in at})
    served = [min((b for b in buckets if b >= n), default=buckets[-1]) for n in lengths]
    shares = ", ".join(f"{b} serves {served.count(b) / len(served):.0%}" for b in buckets)
    padded = sum(b - min(n, b) for b, n in zip(served, lengths, strict=True))
    one = sum(buckets[-1] - min(n, buckets[-1]) for n in lengths)
    saved = 1 - padded / one if one else 0.0
    longer = sum(n > limit for n in lengths)
    said = (f"buckets {', '.join(map(str, buckets))} from {len(texts)} texts of {path.name} (their median, 90th percentile "
            f"and longest token lengths, rounded up to {STEP}): {shares}; {saved:.0%} less padding than one bucket of "
            f"{buckets[-1]}" + (f"; {longer} text(s) longer than the model's {limit} positions are truncated" if longer
                                else ""))  # fmt: skip
    return buckets, said
