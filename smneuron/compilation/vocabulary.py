"""The model's tokenizer, checked and shipped: it must be there, be the model's own (vocabulary sizes against
config.json), and is copied next to the traced graphs as tokenizer.json (the serving code reads only that)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from smneuron.artifact.links import check_file
from smneuron.compilation.tasks import SAMPLE_TEXTS
from smneuron.errors import CompileError

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "sentencepiece.bpe.model",
    "spiece.model",
    "config.json",
)

# a tokenizer that turns more of plain sample text than this into its unknown token is not this model's tokenizer
MAX_UNKNOWN_SHARE = 0.5
TOKENIZER_SOURCES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json + merges.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
)


def check_tokenizer(model_dir: Path) -> None:
    """Refuse a model directory without tokenizer files, before anything is loaded or traced.

    Raises:
        CompileError: none of the files a fast tokenizer is built from.
    """
    has = [
        n
        for n in ("tokenizer.json", "vocab.txt", "spiece.model", "sentencepiece.bpe.model")
        if (model_dir / n).is_file()
    ]
    if (model_dir / "vocab.json").is_file() and (model_dir / "merges.txt").is_file():
        has.append("vocab.json + merges.txt")
    if not has:
        raise CompileError(
            f"{model_dir} has no tokenizer: none of {', '.join(TOKENIZER_SOURCES)} is there.",
            hint="Save the tokenizer next to the model: tokenizer.save_pretrained(DIR) (it writes tokenizer.json).",
        )


def copy_tokenizer(model_dir: Path, out_dir: Path) -> list[str]:
    """Copy tokenizer (and config) files next to the traced files; create tokenizer.json if missing.

    The inference code reads ``tokenizer.json`` with the ``tokenizers`` library only, so the
    serving container needs no transformers.
    """
    copied = []
    for name in TOKENIZER_FILES:
        # a link out of the model dir is refused (artifact.links), not shipped
        if (model_dir / name).is_file():
            shutil.copyfile(check_file(model_dir, model_dir / name), out_dir / name)
            copied.append(name)
    if "tokenizer.json" not in copied:
        import transformers

        try:
            tok = transformers.AutoTokenizer.from_pretrained(str(model_dir), use_fast=True)
            tok.backend_tokenizer.save(str(out_dir / "tokenizer.json"))
        except (OSError, ValueError, AttributeError) as e:
            raise CompileError(
                f"{model_dir} has no tokenizer.json and no fast tokenizer could be built from it: {e}",
                hint="Save a fast tokenizer with tokenizer.save_pretrained(DIR).",
            ) from e
        copied.append("tokenizer.json")
    from tokenizers import Tokenizer

    check_vocabulary(Tokenizer.from_file(str(out_dir / "tokenizer.json")), model_dir)  # sizes: refused
    return sorted(copied)


def check_vocabulary(tokenizer: Any, model_dir: Path) -> str | None:
    """Refuse a tokenizer that is not the model's: more tokens than the model has embeddings, or far fewer (a
    placeholder). Validation cannot catch either: the eager reference shares the tokenizer. A tokenizer that
    turns most of plain English sample text into its unknown token is not refused (a small domain vocabulary
    does that too), but said.

    Returns:
        A note for the user when most of the sample text becomes the unknown token, else None.

    Raises:
        CompileError: the vocabulary sizes do not match the model.
    """
    size = tokenizer.get_vocab_size()
    try:
        model_vocab = int(json.loads((model_dir / "config.json").read_text()).get("vocab_size") or 0)
    except (OSError, ValueError, TypeError):
        model_vocab = 0
    fix = "Save the model's own tokenizer next to it: tokenizer.save_pretrained(DIR)."
    if model_vocab and size > model_vocab:
        raise CompileError(
            f"The tokenizer of {model_dir} has {size} tokens but the model has embeddings for {model_vocab} "
            f"(config.json vocab_size): ids from {model_vocab} up would index past them.",
            hint=fix,
        )
    if model_vocab and size < model_vocab / 2:
        raise CompileError(
            f"The tokenizer of {model_dir} has {size} tokens; the model was trained with {model_vocab} "
            "(config.json vocab_size): it is not this model's tokenizer.",
            hint=fix,
        )
    unknown = next((t for t in ("[UNK]", "<unk>", "<UNK>") if tokenizer.token_to_id(t) is not None), None)
    if unknown is None:  # byte-level vocabularies have no unknown token: every text encodes
        return None
    unk_id = tokenizer.token_to_id(unknown)
    ids = [i for text in SAMPLE_TEXTS for i in tokenizer.encode(text, add_special_tokens=False).ids]
    share = sum(i == unk_id for i in ids) / max(len(ids), 1)
    if share <= MAX_UNKNOWN_SHARE:
        return None
    return (
        f"the tokenizer turns {share:.0%} of plain English sample text into {unknown} ({size} tokens): fine for a "
        "small domain vocabulary; if your inputs are general text, it is not this model's tokenizer"
    )


def vocabulary_note(model_dir: Path) -> str | None:
    """``check_vocabulary`` on the model directory's tokenizer.json, if it has one (else the check runs once
    compile has built tokenizer.json)."""
    path = model_dir / "tokenizer.json"
    if not path.is_file():
        return None
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as e:  # tokenizers raises plain Exceptions for unreadable files
        raise CompileError(
            f"Cannot read {path}: {e}", hint="Save the tokenizer again: tokenizer.save_pretrained(DIR)."
        ) from None
    return check_vocabulary(tokenizer, model_dir)
