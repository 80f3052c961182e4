"""What a benchmark sends: encoder payloads (a JSONL file, or texts of token lengths drawn from the tokenizer) and
text-generation prompts of exact token counts, or a dataset.

Synthetic prompts are made with the model's own tokenizer: words are drawn from its vocabulary and
the token ids cut to exactly the length asked for (lengths drawn from N(mean, stdev) within
[min, max] when a spread is given). Requests go to completions with ``max_tokens`` and
``ignore_eos`` (vLLM's extension, as GuideLLM sends), so output lengths are what was asked for.
A dataset is JSONL: a string, ``{"prompt": ...}`` or ``{"messages": [...]}`` per line (optional
``max_tokens``), or a JSON list of those.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

from smneuron.errors import ConfigError, UsageError
from smneuron.files.user import read_text

# the longest prompt a bench makes (``Lengths.draw``'s bound)
LONGEST_PROMPT = 1 << 20


@dataclass(frozen=True)
class Lengths:
    """A token length distribution: N(mean, stdev) clipped to [min, max]; fixed when stdev is 0."""

    mean: int
    stdev: float = 0.0
    min: int | None = None
    max: int | None = None

    def draw(self, rng: random.Random) -> int:
        n = self.mean if not self.stdev else int(round(rng.gauss(self.mean, self.stdev)))
        lo, hi = self.min if self.min is not None else 1, self.max if self.max is not None else LONGEST_PROMPT
        return max(lo, min(hi, max(1, n)))


def lengths(value: Lengths | int | str, label: str) -> Lengths:
    """A length as a bench takes it: ``Lengths``, a token count, or ``"N"`` / ``"N,stdev,min,max"`` (the CLI's).

    Raises:
        UsageError: not one of those, or a mean below 1, naming ``label`` (the flag or keyword given).
    """
    if isinstance(value, Lengths):
        found = value
    else:
        try:
            parts = [float(x) for x in str(value).split(",")]
            if not 1 <= len(parts) <= 4 or isinstance(value, bool) or not all(map(math.isfinite, parts)):
                raise ValueError  # "inf" was "Unexpected error: OverflowError", "nan" a standard deviation
            found = Lengths(int(parts[0]), parts[1] if len(parts) > 1 else 0.0,
                            *(int(p) for p in parts[2:]))  # fmt: skip
        except ValueError:
            raise UsageError(
                f"{label} {value!r} is not N or N,stdev,min,max.", hint="For example 256, or 256,64,32,512."
            ) from None
    if found.mean < 1:
        raise UsageError(f"{label} must be at least 1 token, got {found.mean}.", hint="For example 256.")
    return found


def load_tokenizer(path: str | Path):  # type: ignore[no-untyped-def]
    """A fast tokenizer from a tokenizer.json, a model/artifact directory that holds one.

    Raises:
        ConfigError: no tokenizer there, or a file that is not one (synthetic prompts need the model's tokenizer to
            count tokens).
    """
    from tokenizers import Tokenizer

    p = Path(path)
    file = p / "tokenizer.json" if p.is_dir() else p
    if not file.is_file():
        raise ConfigError(
            f"No tokenizer.json at {path}: synthetic prompts are counted with the model's own tokenizer.",
            hint="Pass --tokenizer with the model or artifact directory (or its tokenizer.json), or --dataset FILE.",
        )
    try:
        tok = Tokenizer.from_file(str(file))
    except Exception as e:  # tokenizers raises a bare Exception for a file that is not one of its tokenizers
        raise ConfigError(
            f"{file} is not a tokenizer.json the tokenizers library can read ({e}).",
            hint="Pass --tokenizer with the model or artifact directory (or its tokenizer.json, as save_pretrained "
            "writes it), or --dataset FILE.",
        ) from None
    tok.no_padding()  # a tokenizer.json saved with padding/truncation (e.g. for an encoder) would miscount
    tok.no_truncation()
    return tok


def synthetic_prompts(tokenizer, prompt: Lengths, count: int, *, seed: int = 0) -> list[tuple[str, int]]:  # type: ignore[no-untyped-def]
    """``count`` (text, token count) prompts whose encoding (without special tokens) is exactly the length drawn."""
    vocab = tokenizer.get_vocab()
    words = sorted(w for w in vocab if w.isalpha() and w.isascii() and len(w) > 1) or sorted(vocab)
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = prompt.draw(rng)
        text = ""
        for _ in range(8):  # the cut may re-tokenize differently at its edge: adjust until exact
            ids = tokenizer.encode(text, add_special_tokens=False).ids
            while len(ids) < n:
                text = (text + " " + " ".join(rng.choice(words) for _ in range(n - len(ids) + 2))).strip()
                ids = tokenizer.encode(text, add_special_tokens=False).ids
            text = tokenizer.decode(ids[:n])
            if len(tokenizer.encode(text, add_special_tokens=False).ids) == n:
                break
        out.append((text, len(tokenizer.encode(text, add_special_tokens=False).ids)))
    return out


def completion_body(prompt: str, max_tokens: int, *, model: str | None = None, stream: bool = True) -> bytes:
    body: dict = {
        "prompt": prompt,
        "max_tokens": max_tokens,
        "ignore_eos": True,
        "stream": stream,
        "temperature": 0,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    if model:
        body["model"] = model
    return json.dumps(body).encode()


def requests_from(
    *,
    tokenizer_path: str | Path | None,
    prompt_tokens: Lengths | None,
    output_tokens: Lengths,
    dataset: str | Path | None = None,
    count: int = 256,
    seed: int = 0,
    model: str | None = None,
) -> list[bytes]:
    """The request bodies of a run (cycled through when the run needs more).

    Raises:
        ConfigError: neither a dataset nor prompt lengths with a tokenizer; an empty or unreadable dataset.
    """
    rng = random.Random(seed + 1)
    if dataset:
        items = _read_dataset(Path(dataset))
        bodies = []
        for item in items:
            doc = {"prompt": item} if isinstance(item, str) else dict(item)
            doc.setdefault("max_tokens", output_tokens.draw(rng))
            doc.update(stream=True, stream_options={"include_usage": True})
            if model:
                doc.setdefault("model", model)
            bodies.append(json.dumps(doc).encode())
        return bodies
    if prompt_tokens is None or tokenizer_path is None:
        raise ConfigError(
            "A text-generation benchmark needs prompts: --prompt-tokens N with --tokenizer (synthetic, exact to "
            "the tokenizer), or --dataset FILE.",
            hint="e.g. --prompt-tokens 256 --output-tokens 128 --tokenizer ./artifact",
        )
    _check_fits(prompt_tokens, output_tokens, Path(tokenizer_path))
    tok = load_tokenizer(tokenizer_path)
    return [
        completion_body(text, output_tokens.draw(rng), model=model)
        for text, _ in synthetic_prompts(tok, prompt_tokens, count, seed=seed)
    ]


def _check_fits(prompt: Lengths, output: Lengths, tokenizer_path: Path) -> None:
    """Refuse synthetic lengths the model cannot take, before any prompt is made: ``--prompt-tokens 1e9`` was cut to
    a million tokens without a word and then spent minutes tokenizing 256 such prompts.

    Raises:
        UsageError: the mean prompt and output lengths pass the positions the model has (an artifact's compiled
            sequence length, else config.json's max_position_embeddings, beside the tokenizer), or a prompt passes
            ``LONGEST_PROMPT``.
    """
    folder = tokenizer_path if tokenizer_path.is_dir() else tokenizer_path.parent
    positions = _positions(folder)
    longest = [x.mean if x.max is None else x.max for x in (prompt, output)]  # a clipped spread: its bound
    if positions and sum(longest) > positions[0]:
        raise UsageError(
            f"A request of {longest[0]} prompt and {longest[1]} output tokens (--prompt-tokens, --output-tokens) "
            f"passes the {positions[0]} positions of the model ({positions[1]}): the server would refuse it.",
            hint="Shorten them to fit, or pass the tokenizer of the model the endpoint serves (--tokenizer).",
        )
    if prompt.mean > LONGEST_PROMPT:
        raise UsageError(
            f"--prompt-tokens {prompt.mean} is past {LONGEST_PROMPT:,} tokens, the longest prompt a bench makes.",
            hint="For example --prompt-tokens 256, or --dataset FILE with your prompts.",
        )


def _positions(folder: Path) -> tuple[int, str] | None:
    """(positions, where that is said) of the model in ``folder``: its compiled sequence length, else its config."""
    for name, key, find in (
        ("smneuron.json", "sequence_length", lambda d: (d.get("generation") or {}).get("sequence_length")),
        ("config.json", "max_position_embeddings", lambda d: d.get("max_position_embeddings")),
    ):
        try:
            found = find(json.loads((folder / name).read_text()))
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(found, int) and found > 0:
            return found, f"{folder / name}: {key}"
    return None


def _read_dataset(path: Path) -> list:
    try:
        text = read_text(path, "the dataset")
    except OSError as e:
        raise ConfigError(f"Cannot read the dataset {path}: {e}") from None
    try:
        items = (
            json.loads(text)
            if text.lstrip().startswith("[")
            else [json.loads(line) for line in text.splitlines() if line.strip()]
        )
    except ValueError as e:
        raise ConfigError(f"{path} is not JSONL (or a JSON list): {e}") from None
    bad = [
        i
        for i in items
        if not (isinstance(i, str) or (isinstance(i, dict) and ("prompt" in i or "messages" in i)))
    ]
    if not items or bad:
        raise ConfigError(
            f"{path} has {'no requests' if not items else f'{len(bad)} lines without prompt or messages'}.",
            hint='Each line: "text", {"prompt": "..."} or {"messages": [{"role": "user", "content": "..."}]}.',
        )
    return items


def load_payloads(
    data: str | Path | None = None,
    *,
    tokenizer: str | Path | None = None,
    count: int = 200,
    mean_tokens: int = 24,
    spread: int = 8,
    batch: int = 1,
    seed: int = 0,
) -> list[bytes]:
    """Request bodies from a JSONL file (one input, or a full request object, per line) or generated.

    Generated texts draw words from the tokenizer's vocabulary until each reaches a token length
    drawn from N(mean_tokens, spread).
    """
    if data:
        try:
            lines = read_text(data, "the requests file").splitlines()
        except OSError as e:
            raise ConfigError(
                f"Cannot read the requests file {data}: {e.strerror or e}.",
                hint="Pass a JSONL file with --data (one input per line), or --tokenizer to generate texts.",
            ) from None
        bodies = []
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    value = json.loads(line)
                except ValueError as e:
                    raise ConfigError(
                        f"{data}, line {number}, is not JSON ({e.args[0]}).",
                        hint='Each line: a text ("hello"), a list of texts, or a request ({"inputs": ...}).',
                    ) from None
                doc = value if isinstance(value, dict) and "inputs" in value else {"inputs": value}
                bodies.append(json.dumps(doc).encode())
        if not bodies:
            raise ConfigError(f"{data} has no requests.")
        return bodies
    if tokenizer is None:
        raise ConfigError(
            "The bench has nothing to send: it needs the requests, or a tokenizer to make texts from.",
            hint="Pass --data inputs.jsonl (one input per line), or --tokenizer with a tokenizer.json or the directory "
            "that holds one (the compiled artifact's directory has the model's).",
        )
    tok = load_tokenizer(tokenizer)  # a tokenizer.json or the directory that holds one
    words = [w for w in tok.get_vocab() if w.isalpha() and w.isascii() and len(w) > 1]
    rng = random.Random(seed)
    bodies = []
    for _ in range(count):
        texts = []
        for _ in range(batch):
            target = max(2, int(rng.gauss(mean_tokens, spread)))
            text: list[str] = []
            while len(tok.encode(" ".join(text)).ids) < target:
                text.append(rng.choice(words))
            texts.append(" ".join(text))
        bodies.append(json.dumps({"inputs": texts if batch > 1 else texts[0]}).encode())
    return bodies


def as_openai_embeddings(payloads: list[bytes], model: str = "smneuron") -> list[bytes]:
    """The same inputs as OpenAI embeddings requests (``{"input": ..., "model": ...}``), the shape GuideLLM, AIPerf
    and SageMaker's AI benchmark jobs send: a bench of that path measures what they would.

    Raises:
        ConfigError: a request that is not ``{"inputs": text or texts}`` (pairs, parameters).
    """
    out = []
    for body in payloads:
        doc = json.loads(body)
        texts = doc.get("inputs")
        if set(doc) != {"inputs"} or not (
            isinstance(texts, str) or isinstance(texts, list) and all(isinstance(t, str) for t in texts)
        ):
            raise ConfigError(
                f"Cannot send {body[:60]!r} as an OpenAI embeddings request: only texts (no pairs, no parameters).",
                hint="Bench with plain texts, or drop --openai.",
            )
        out.append(json.dumps({"input": texts, "model": model}).encode())
    return out
