"""A local stand-in for the vLLM containers (optimum-neuron's on inf2; AWS's GPU image for a cuda artifact, whose
``SM_VLLM_*`` variables are vLLM's own flags): their contract, served by transformers on CPU.

What it shares with the container (optimum/commands/neuron/serve.py + vLLM's OpenAI server): the
configuration comes from ``SM_ON_*`` variables and must match the compiled model (batch size, sequence
length and tp, else it refuses to start); GET /ping; POST /invocations routes ``messages`` to chat
completions and ``prompt`` to completions (also /v1/chat/completions, /v1/completions); ``"stream":
true`` answers with server-sent events, chunk per token, ``data: [DONE]`` last, and a usage chunk
when ``stream_options.include_usage``; ``max_tokens``, ``ignore_eos``, ``temperature``, ``seed``; for
completions, ``echo`` with ``logprobs`` (the prompt's token log-probabilities, vLLM's prompt logprobs; with
``logprobs`` N the top N per position, at most 20 as vLLM's default --max-logprobs, keyed ``token_id:ID`` with
``return_tokens_as_token_ids``);
at most batch size sequences decode at once (vLLM's --max-num-seqs), the rest queue; a prompt +
max_tokens over the sequence length is a 400. Each decoding step takes the model lock, so concurrent
sequences interleave token by token as in continuous batching.

Run: the embedded SageMaker forks a copy into ``run_copy`` (``copy.Forked``); by hand,
``python -m smneuron.local.generation.standin --model-dir DIR --port N``.

One module because it is one program, the container's stand-in: the configuration checks the real entrypoints make
(``configuration``, also used before vLLM is started) and the server that honours what they let through.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from smneuron.catalog import matrix
from smneuron.serving.access import REFUSAL, allowed, server_key
from smneuron.serving.isolation import MARK, isolate, said
from smneuron.serving.worker import output_to


class Refused(Exception):
    """The container would not start (configuration differs from the compiled model)."""


# the Model's image, given to a local copy by the embedded SageMaker
IMAGE_VARIABLE = "SMNEURON_CONTAINER_IMAGE"


def check_export(model_dir: Path, image: str | None) -> None:
    """An optimum-neuron export is loaded only by the optimum-neuron and neuronx-cc that made it: the container's
    ``NeuronConfig.from_dict`` (optimum-neuron v0.4.5, configuration_utils.py) raises with these words otherwise.
    The container's versions are its row in the compatibility matrix; an image the matrix does not describe is
    not checked here (nor is a model without neuron_config.json: not an optimum-neuron export)."""
    path = model_dir / "neuron_config.json"
    if not path.is_file() or not image:
        return
    row = matrix.row_for(*matrix.image_of(image))
    if row is None:
        return
    config, has = json.loads(path.read_text()), row.packages()
    version, installed = config.get("optimum_neuron_version"), has.get("optimum-neuron")
    if version is None or config.get("neuronxcc_version") is None:
        raise Refused("Invalid neuron configuration: missing mandatory optimum_neuron_version attribute.")
    if installed and version != installed:
        raise Refused(
            f"This neuron configuration file was generated with optimum-neuron version {version}, but this version "
            f"is {installed}."
        )
    compiled, compiler = config["neuronxcc_version"], has.get("neuronx-cc")
    if compiler and compiled != compiler:
        raise Refused(
            f"This neuron configuration corresponds to a model exported using version {compiled} of the neuronxcc "
            f"compiler, but {compiler} is installed."
        )


def configuration(model_dir: Path, env: dict[str, str]) -> dict:
    """The served configuration: from SM_ON_*, checked against smneuron.json as optimum-neuron's serve does; or, for
    a cuda artifact under AWS's GPU vLLM image, from SM_VLLM_* (vLLM's own flags: batch and length are runtime
    settings there, checked as vLLM checks them)."""
    check_export(model_dir, env.get(IMAGE_VARIABLE))
    manifest = json.loads((model_dir / "smneuron.json").read_text())
    gen, target = manifest["generation"], manifest["compiler"]["target"]
    if target not in ("cpu", "cuda"):
        raise Refused(
            f"The model was compiled for {target} and needs NeuronCores (torch-neuronx / optimum-neuron); "
            "this CPU host has none."
        )
    if any(k.startswith("SM_VLLM_") for k in env):
        return _vllm_configuration(model_dir, env, gen)
    if target == "cuda":
        raise Refused(
            "The model is a cuda artifact (weights for AWS's GPU vLLM image, SM_VLLM_* variables); optimum-neuron's "
            "serve (SM_ON_*) loads only Neuron exports."
        )
    served = {}
    for key, field in (
        ("BATCH_SIZE", "batch_size"),
        ("SEQUENCE_LENGTH", "sequence_length"),
        ("TENSOR_PARALLEL_SIZE", "tensor_parallel_size"),
    ):
        value = env.get(f"SM_ON_{key}")
        if value is not None and int(value) != int(gen[field]):
            raise Refused(
                f"The specified {field} {value} is inconsistent with the one used to export the neuron model "
                f"({gen[field]})"
            )
        served[field] = int(gen[field])
    served["model"] = env.get("SM_ON_MODEL", str(model_dir))
    return served


def _vllm_configuration(model_dir: Path, env: dict[str, str], gen: dict) -> dict:
    """What vLLM's OpenAI server serves with SM_VLLM_* as its flags (aws/deep-learning-containers
    vllm/build_artifacts/sagemaker_entrypoint.sh): its --max-num-seqs, --max-model-len, --tensor-parallel-size, and the
    served name (--served-model-name, else --model). A length beyond the model's max_position_embeddings is refused
    as vLLM refuses it at start."""
    served = {
        "batch_size": int(env.get("SM_VLLM_MAX_NUM_SEQS") or gen["batch_size"]),
        "sequence_length": int(env.get("SM_VLLM_MAX_MODEL_LEN") or gen["sequence_length"]),
        "tensor_parallel_size": int(env.get("SM_VLLM_TENSOR_PARALLEL_SIZE") or gen["tensor_parallel_size"]),
        "model": env.get("SM_VLLM_SERVED_MODEL_NAME") or env.get("SM_VLLM_MODEL") or str(model_dir),
    }
    config = json.loads((model_dir / "config.json").read_text())
    limit = config.get("max_position_embeddings")
    if limit and served["sequence_length"] > int(limit):
        raise Refused(
            f"User-specified max_model_len ({served['sequence_length']}) is greater than the derived max_model_len "
            f"(max_position_embeddings={limit} in model's config.json)."
        )
    return served


class Generator:
    """Token-by-token decoding with a KV cache; one model step at a time (the lock)."""

    def __init__(self, model_dir: Path, batch_size: int, sequence_length: int) -> None:
        import torch
        import transformers

        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
        transformers.utils.logging.disable_progress_bar()
        self.torch = torch
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(model_dir))
        self.model = transformers.AutoModelForCausalLM.from_pretrained(
            str(model_dir), dtype=torch.float32
        ).eval()
        self.lock = threading.Lock()
        self.slots = threading.BoundedSemaphore(batch_size)
        self.sequence_length = sequence_length
        self.eos = self.tokenizer.eos_token_id
        self.vocabulary = int(self.model.config.vocab_size)

    def encode(self, request: dict) -> list[int]:
        """The prompt's token ids. A text longer than ``sequence_length * CHARS_PER_TOKEN`` characters is refused
        before it is tokenized (a 5 MB prompt costs a copy no seconds): no tokenizer's pieces are that long on average,
        so it holds more tokens than the context, and vLLM refuses that as a context overflow too."""
        texts = [request["prompt"]] if isinstance(request.get("prompt"), str) else request.get("prompt") or []
        texts += [str(m.get("content", "")) for m in request.get("messages") or [] if isinstance(m, dict)]
        size = sum(len(t) for t in texts if isinstance(t, str))
        if size > self.sequence_length * CHARS_PER_TOKEN:
            raise ValueError(
                f"This model's maximum context length is {self.sequence_length} tokens. However, your request's "
                f"{size} characters hold far more tokens than that. Please reduce the length of the messages or "
                "prompt."
            )
        if "messages" in request:
            if not getattr(
                self.tokenizer, "chat_template", None
            ):  # vLLM's words (transformers has no default)
                raise ValueError(
                    "As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat "
                    "template if the tokenizer does not define one. None"
                )
            ids = self.tokenizer.apply_chat_template(
                request["messages"], add_generation_prompt=True, tokenize=True
            )
            return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
        prompt = request["prompt"]
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], int):
            return list(prompt)
        return self.tokenizer(prompt if isinstance(prompt, str) else " ".join(prompt))["input_ids"]

    def prompt_logprobs(self, ids: list[int]) -> list[float | None]:
        """log p(token | the tokens before it) for each prompt token (None for the first), as vLLM's
        prompt_logprobs gives them."""
        torch = self.torch
        with self.lock, torch.no_grad():
            logits = self.model(input_ids=torch.tensor([ids])).logits[0]
        logp = torch.log_softmax(logits[:-1].float(), dim=-1)
        return [None, *(float(logp[i, t]) for i, t in enumerate(ids[1:]))]

    def top_logprobs(self, ids: list[int], top: int) -> list[dict[int, float] | None]:
        """Per token of ``ids``: the ``top`` most likely tokens at its position and its own (None for the first), as
        vLLM's prompt logprobs give them."""
        torch = self.torch
        with self.lock, torch.no_grad():
            logits = self.model(input_ids=torch.tensor([ids])).logits[0]
        logp = torch.log_softmax(logits[:-1].float(), dim=-1)
        out: list[dict[int, float] | None] = [None]
        for i, token in enumerate(ids[1:]):
            values, found = torch.topk(logp[i], min(top, logp.shape[-1]))
            entry = {int(t): float(v) for t, v in zip(found, values, strict=True)}
            entry.setdefault(int(token), float(logp[i, token]))
            out.append(entry)
        return out

    def tokens(self, ids: list[int], request: dict) -> Iterator[tuple[str, int, float]]:
        """Yield (text piece, token id, its log-probability) per generated token."""
        torch = self.torch
        max_tokens, temperature, seed = sampling(request)
        ignore_eos = bool(request.get("ignore_eos", False))
        gen = torch.Generator().manual_seed(seed) if seed is not None else None
        past, current, produced, emitted = None, torch.tensor([ids]), [], ""
        with self.slots:
            for _ in range(max_tokens):
                with self.lock, torch.no_grad():
                    out = self.model(input_ids=current, past_key_values=past, use_cache=True)
                past, logits = out.past_key_values, out.logits[0, -1]
                if ignore_eos and self.eos is not None:
                    logits[self.eos] = -float("inf")
                if temperature <= 0:
                    token = int(torch.argmax(logits))
                else:
                    probs = torch.softmax(logits / temperature, dim=-1)
                    token = int(torch.multinomial(probs, 1, generator=gen))
                if token == self.eos and not ignore_eos:
                    return
                produced.append(token)
                text = self.tokenizer.decode(produced, skip_special_tokens=True)
                piece, emitted = text[len(emitted) :], text
                yield piece, token, float(torch.log_softmax(logits.float(), dim=-1)[token])
                current = torch.tensor([[token]])


CHARS_PER_TOKEN = 64  # characters per token of context beyond which a prompt is refused untokenized
INT64 = (-(2**63), 2**63 - 1)  # vLLM's seed bounds (entrypoints/openai protocol: ge/le _LONG_INFO.min/.max)


def sampling(request: dict) -> tuple[int, float, int | None]:
    """(max_tokens, temperature, seed) of a request, checked as vLLM checks them: its request model first (pydantic's
    words: wrong types, non-finite numbers, the seed's int64 bounds), then ``SamplingParams._verify_args``
    (vllm/sampling_params.py: temperature finite and in [0, 2], top_p in (0, 1], max_tokens at least 1).

    Raises:
        ValueError: with vLLM's words.
    """

    def number(name: str, kind: type, default: Any) -> Any:
        value = request.get(name)
        if value is None:
            return default
        noun = "integer" if kind is int else "number"
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(f"{name}: Input should be a valid {noun}")
        if isinstance(value, str):
            try:
                value = int(value) if kind is int else float(value)
            except ValueError:
                raise ValueError(
                    f"{name}: Input should be a valid {noun}, unable to parse string as {'an' if kind is int else 'a'} "
                    f"{noun}"
                ) from None
        if isinstance(value, float) and kind is int:
            if not math.isfinite(value):
                raise ValueError(f"{name}: Input should be a finite number")
            if value != int(value):
                raise ValueError(
                    f"{name}: Input should be a valid integer, got a number with a fractional part"
                )
        return kind(value)

    max_tokens = number("max_tokens", int, None)
    if max_tokens is None:
        max_tokens = number("max_completion_tokens", int, 16)
    seed = number("seed", int, None)
    if seed is not None and seed > INT64[1]:
        raise ValueError(f"seed: Input should be less than or equal to {INT64[1]}")
    if seed is not None and seed < INT64[0]:
        raise ValueError(f"seed: Input should be greater than or equal to {INT64[0]}")
    temperature = number("temperature", float, 1.0)
    top_p = number("top_p", float, 1.0)
    if not math.isfinite(temperature):
        raise ValueError(f"temperature must be a finite number, got {temperature}.")
    if temperature < 0:
        raise ValueError(f"temperature must be non-negative, got {temperature}.")
    if temperature > 2:
        raise ValueError(f"temperature must be in [0, 2], got {temperature}.")
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}.")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}.")
    return max_tokens, temperature, seed


def check_prompt(request: dict, vocabulary: int) -> None:
    """The prompt as vLLM's OpenAI server takes it: a non-empty string, list of strings or list of token ids within
    the vocabulary (chat: a non-empty list of messages). The exact wording of vLLM's refusals of an empty prompt is
    not copied here (unverified); their status, 400, is.

    Raises:
        ValueError: what is wrong with it.
    """
    if "messages" in request:
        messages = request["messages"]
        if not isinstance(messages, list) or not messages:
            raise ValueError("messages: Input should be a non-empty list of chat messages")
        if not all(isinstance(m, dict) for m in messages):
            raise ValueError("messages: each message should be an object with a role and content")
        return
    prompt = request.get("prompt")
    if isinstance(prompt, str):
        if not prompt:
            raise ValueError("The prompt cannot be empty.")
        return
    if not isinstance(prompt, list) or not prompt:
        raise ValueError("prompt: Input should be a non-empty string, list of strings or list of token ids")
    if all(isinstance(x, str) for x in prompt):
        if not all(prompt):
            raise ValueError("The prompt cannot be empty.")
        return
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in prompt):
        raise ValueError("prompt: Input should be a valid string or a list of token ids (integers)")
    bad = [x for x in prompt if not 0 <= x < vocabulary]
    if bad:
        raise ValueError(f"Token id {max(bad, key=abs)} is out of vocabulary")


def read_timeout_s() -> float:
    """Seconds a request's body may take to arrive; read when the handler is made (a copy forked from a preloaded
    forkserver imported this module before its environment was set)."""
    return float(os.environ.get("SMNEURON_STANDIN_READ_TIMEOUT", "60"))


def handler_for(gen: Generator, served: dict) -> type[BaseHTTPRequestHandler]:
    """The copy's HTTP handler for ``gen`` (what it serves: ``served``), answering only the service that started it."""
    # set when the embedded SageMaker started this copy: it alone may call it; the socket's timeout: a request
    # announcing 1 GB no longer holds a thread forever
    return type(
        "Handler",
        (_Handler,),
        {"gen": gen, "served": served, "key": server_key(), "timeout": read_timeout_s()},
    )


class _Handler(BaseHTTPRequestHandler):
    """The vLLM container's OpenAI-compatible routes, as the stand-in answers them (see the module)."""

    protocol_version = "HTTP/1.0"  # a stream ends when the connection closes, as SSE over HTTP/1.0 does
    gen: Generator
    served: dict
    key: str | None

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, status: int, doc: dict) -> None:
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _refused(self) -> bool:
        """Whether the caller lacks the key of the service that started this copy (then it was answered 401)."""
        if allowed(self.headers.get("Authorization"), self.key):
            return False
        self.close_connection = True
        self._json(401, _error(REFUSAL["error"], 401))
        return True

    def do_GET(self) -> None:
        if self._refused():
            return
        if self.path in ("/ping", "/health"):
            self._json(200, {"status": "healthy"})
        elif self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": self.served["model"], "object": "model"}]})
        else:
            self._json(404, _error(f"{self.path} not found", 404))

    def do_POST(self) -> None:
        if self._refused():
            return
        try:
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        except ValueError as e:
            return self._json(400, _error(f"Invalid JSON body: {e}", 400))
        except TimeoutError:
            self.close_connection = True
            return self._json(
                408, _error(f"The request body did not arrive within {self.timeout:.0f} s.", 408)
            )
        if not isinstance(request, dict):
            return self._json(400, _error("The body must be a JSON object.", 400))
        try:
            sampling(request)  # before any byte, streamed or not: vLLM's 400
        except ValueError as e:
            return self._json(400, _error(str(e), 400))
        if self.path not in ("/invocations", "/v1/chat/completions", "/v1/completions"):
            return self._json(404, _error(f"{self.path} not found", 404))
        chat = (
            "messages" in request if self.path == "/invocations" else self.path.endswith("chat/completions")
        )
        if ("messages" if chat else "prompt") not in request:
            return self._json(
                400, _error("The request needs `messages` (chat) or `prompt` (completion).", 400)
            )
        asked = self._asked(request, chat)
        if asked is not None:
            ids, max_tokens, wanted = asked
            rid = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:24]}"
            base = {"id": rid, "created": int(time.time()), "model": self.served["model"]}
            answer = self._stream if request.get("stream") else self._whole
            answer(request, chat, ids, max_tokens, wanted, base)

    def _asked(self, request: dict, chat: bool) -> tuple[list[int], int, Any] | None:
        """The prompt's token ids, the tokens to generate and the log-probabilities wanted; None when the request
        was refused (answered 400 as vLLM answers it, before any byte of a stream)."""
        try:
            check_prompt(request, self.gen.vocabulary)
            ids = self.gen.encode(request)
        except (TypeError, KeyError, ValueError, AttributeError) as e:
            self._json(400, _error(f"Cannot read the request: {e}", 400))
            return None
        try:
            max_tokens = sampling(request)[0]
            wanted = chat_top(request) if chat else request.get("logprobs")
            if isinstance(wanted, int) and wanted > MAX_LOGPROBS:  # vLLM's processor refuses it so
                raise ValueError(
                    f"Requested sample logprobs of {wanted}, which is greater than max allowed: {MAX_LOGPROBS}"
                )
        except ValueError as e:
            self._json(400, _error(str(e), 400))
            return None
        if len(ids) + max_tokens > self.gen.sequence_length:
            self._json(400, _error(
                f"This model's maximum context length is {self.gen.sequence_length} tokens. However, you requested "
                f"{len(ids) + max_tokens} tokens ({len(ids)} in the messages, {max_tokens} in the completion). "
                "Please reduce the length of the messages or completion.", 400))  # fmt: skip
            return None
        return ids, max_tokens, wanted

    def _whole(
        self, request: dict, chat: bool, ids: list[int], max_tokens: int, wanted: Any, base: dict
    ) -> None:
        gen = self.gen
        produced = list(gen.tokens(ids, request))
        text, n = "".join(p for p, _, _ in produced), len(produced)
        choice: dict = (
            {"index": 0, "message": {"role": "assistant", "content": text}}
            if chat
            else {"index": 0, "text": text}
        )
        if not chat and request.get("echo"):
            choice["text"] = gen.tokenizer.decode(ids, skip_special_tokens=True) + text
        if not chat and request.get("logprobs") is not None:
            choice["logprobs"] = _logprobs(gen, ids, produced, request)
        if chat and request.get("logprobs"):
            tops = gen.top_logprobs(ids + [t for _, t, _ in produced], wanted)[len(ids) :] if wanted else None
            choice["logprobs"] = {"content": [_chat_logprob(gen, t, lp, tops[i] if tops else None, wanted, request)
                                              for i, (_, t, lp) in enumerate(produced)]}  # fmt: skip
        choice["finish_reason"] = "length" if n >= max_tokens else "stop"
        kind = "chat.completion" if chat else "text_completion"
        self._json(200, {**base, "object": kind, "choices": [choice], "usage": _usage(len(ids), n)})

    def _stream(
        self, request: dict, chat: bool, ids: list[int], max_tokens: int, wanted: Any, base: dict
    ) -> None:
        """Server-sent events, as vLLM sends them; a failure mid-stream is in band, then ``[DONE]``."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        kind = "chat.completion.chunk" if chat else "text_completion"
        if chat:
            first = {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
            self._event({**base, "object": kind, "choices": [first]})
        n, so_far = 0, list(ids)
        try:
            for piece, token, logprob in self.gen.tokens(ids, request):
                n += 1
                so_far.append(token)
                choice: dict = (
                    {"index": 0, "delta": {"content": piece}} if chat else {"index": 0, "text": piece}
                )
                if chat and request.get("logprobs"):  # vLLM streams each token's logprobs with its piece
                    top = self.gen.top_logprobs(so_far, wanted)[-1] if wanted else None
                    choice["logprobs"] = {
                        "content": [_chat_logprob(self.gen, token, logprob, top, wanted, request)]
                    }
                self._event({**base, "object": kind, "choices": [{**choice, "finish_reason": None}]})
        except (BrokenPipeError, ConnectionResetError):
            return  # the caller left: nothing to tell it
        except Exception as e:  # any failure mid-stream: in band, as vLLM reports it, then [DONE]
            self._event({"error": {**_error(f"{type(e).__name__}: {e}", 500), "type": "InternalServerError"}})
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            return
        last = {"index": 0, "delta": {}} if chat else {"index": 0, "text": ""}
        self._event(
            {
                **base,
                "object": kind,
                "choices": [{**last, "finish_reason": "length" if n >= max_tokens else "stop"}],
            }
        )
        if (request.get("stream_options") or {}).get("include_usage"):
            self._event({**base, "object": kind, "choices": [], "usage": _usage(len(ids), n)})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _event(self, doc: dict) -> None:
        self.wfile.write(b"data: " + json.dumps(doc).encode() + b"\n\n")
        self.wfile.flush()


MAX_LOGPROBS = 20  # vLLM's default --max-logprobs


def chat_top(request: dict) -> int:
    """How many top log-probabilities a chat request asks per token, checked as vLLM's ChatCompletionRequest checks
    them (``check_logprobs``: ``top_logprobs`` -1 or more, and ``logprobs: true`` when it asks for any).

    Raises:
        ValueError: with vLLM's words.
    """
    top = request.get("top_logprobs")
    if top is None:
        return 0
    if isinstance(top, bool) or not isinstance(top, int):
        raise ValueError("top_logprobs: Input should be a valid integer")
    if top < 0 and top != -1:
        raise ValueError("`top_logprobs` must be a positive value or -1.")
    if (top == -1 or top > 0) and not request.get("logprobs"):
        raise ValueError("when using `top_logprobs`, `logprobs` must be set to true.")
    return MAX_LOGPROBS + 1 if top == -1 else top  # -1: the whole vocabulary, over --max-logprobs


def _chat_logprob(
    gen: Generator, token: int, logprob: float, top: dict[int, float] | None, wanted: int, request: dict
) -> dict:
    """One generated token's entry of a chat answer's ``logprobs.content``, as vLLM's ``_create_chat_logprobs`` gives
    it: the token (``token_id:N`` on ``return_tokens_as_token_ids``), its logprob, its bytes, the top ``wanted``."""

    def key(t: int) -> str:
        return f"token_id:{t}" if request.get("return_tokens_as_token_ids") else gen.tokenizer.decode([t])

    def entry(t: int, lp: float) -> dict:
        name = key(t)
        return {
            "token": name,
            "logprob": max(lp, -9999.0),
            "bytes": list(name.encode("utf-8", errors="replace")),
        }

    ranked = sorted((top or {}).items(), key=lambda x: -x[1])[:wanted]
    return {**entry(token, logprob), "top_logprobs": [entry(t, lp) for t, lp in ranked]}


def _logprobs(gen: Generator, ids: list[int], produced: list, request: dict) -> dict:
    """A completion's ``logprobs`` as vLLM's OpenAI server gives them: with ``echo`` the prompt's too; with
    ``logprobs`` N > 0 the top N per position (and the token itself), keyed ``token_id:ID`` when the request asks
    ``return_tokens_as_token_ids``."""
    top = int(request.get("logprobs") or 0)
    as_ids = bool(request.get("return_tokens_as_token_ids"))

    def key(token: int) -> str:
        return f"token_id:{token}" if as_ids else gen.tokenizer.decode([token])

    every = ids + [t for _, t, _ in produced] if request.get("echo") else None
    if every is not None:
        prompt = gen.prompt_logprobs(ids)
        tops = gen.top_logprobs(every, top) if top else None
    else:
        prompt, tops = (
            [],
            (gen.top_logprobs(ids + [t for _, t, _ in produced], top)[len(ids) :] if top else None),
        )
    shown = (ids if request.get("echo") else []) + [t for _, t, _ in produced]
    return {
        "tokens": [key(t) for t in shown],
        "token_logprobs": prompt + [lp for _, _, lp in produced],
        "top_logprobs": [None if e is None else {key(t): v for t, v in e.items()} for e in tops]
        if tops
        else None,
        "text_offset": None,
    }


def _usage(prompt: int, completion: int) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _error(message: str, code: int) -> dict:
    return {"object": "error", "message": message, "type": "BadRequestError", "param": None, "code": code}


def serve(model_dir: Path, environment: dict[str, str], host: str = "127.0.0.1", port: int = 8080) -> int:
    """Serve in the foreground until Ctrl-C with the container ``environment`` given (``SM_ON_*``), as the
    container reads it; the calling process's own environment is neither read nor changed.

    Returns:
        The exit code: 1 when the configuration is refused (the reason on stderr), as the container exits.
    """
    try:
        served = configuration(model_dir, environment)
    except Refused as e:
        print(f"ValueError: {e}", file=sys.stderr)
        return 1
    gen = Generator(model_dir, served["batch_size"], served["sequence_length"])
    server = ThreadingHTTPServer((host, port), handler_for(gen, served))
    server.daemon_threads = True
    print(f"serving {served['model']} on {host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def run_copy(model_dir: str, environment: dict[str, str], port: int, log_path: str) -> None:
    """A copy forked from a preloaded forkserver (``copy.Forked``): its output to ``log_path``, the container
    environment as its own, the model directory as its working one (as /opt/ml/model is a container's), then
    ``serve`` until stopped; exits 1 when the configuration is refused, as the container does."""
    output_to(log_path)
    os.environ.update(environment)
    if environment.get(MARK):  # an isolated Model's copy: no credentials, endpoint or proxy
        print(said(isolate(os.environ)), flush=True)
    model = Path(model_dir).resolve()
    os.chdir(model)
    sys.exit(serve(model, dict(os.environ), "127.0.0.1", port))


def main(argv: list[str] | None = None) -> int:
    """The container's entry point: the environment is this process's own (a copy's subprocess)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True, type=Path)
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    return serve(args.model_dir, dict(os.environ), args.host, args.port)


if __name__ == "__main__":
    sys.exit(main())
