"""Load a compiled artifact and run batched, bucketed forward passes.

Runs inside the DLC (Python 3.8+, torch 1.13 or 2.x) and the local endpoint; imports nothing from
smneuron. Reads ``smneuron.json`` as plain JSON.
"""

import json
import os
import time

from serving_codec import RequestError

CHARS_PER_TOKEN = (
    64  # the text window read per token of the largest bucket: far above any tokenizer's piece length
)

SCHEMA_VERSION = 1
RUNTIME_PACKAGES = {"inf1": ("torch-neuron", "torch_neuron"), "inf2": ("torch-neuronx", "torch_neuronx")}


class ArtifactLoadError(RuntimeError):
    """The artifact cannot be served here (schema, runtime versions, missing files)."""


def _version_tuple(text):
    parts = []
    for piece in str(text).split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def installed_version(dist):
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover - Python < 3.8
        return None
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def check_runtime(manifest):
    """Refuse an artifact compiled by a newer Neuron package than this runtime has."""
    target = manifest["compiler"]["target"]
    if target not in RUNTIME_PACKAGES:
        return
    dist, _ = RUNTIME_PACKAGES[target]
    compiled = manifest.get("versions", {}).get(dist)
    running = installed_version(dist)
    if running is None:
        raise ArtifactLoadError(
            "This artifact was compiled for %s and needs %s, which is not installed here. Serve it on an ml.%s "
            "instance with the Neuron DLC image, or recompile with --target cpu to run it locally."
            % (target, dist, target)
        )
    if compiled and _version_tuple(running) < _version_tuple(compiled):
        raise ArtifactLoadError(
            "The artifact was compiled with %s %s but this runtime has %s %s, which is older. Deploy with a DLC "
            "image whose Neuron SDK is at least as new as the compiler's (see `smneuron images`), or recompile "
            "in this image." % (dist, compiled, dist, running)
        )


def select_device(manifest, torch, environ=None):
    """Where this worker runs the model: None (the CPU, or Neuron through its runtime) or, for a cuda artifact,
    ``cuda:N`` with N the GPU TorchServe gave this worker (SMNEURON_GPU_ID, set by the handler from the
    context's gpu_id; workers are spread round robin) modulo the GPUs present.

    Raises:
        ArtifactLoadError: a cuda artifact on a host without an NVIDIA GPU (said the way a Neuron artifact is).
    """
    if manifest["compiler"]["target"] != "cuda":
        return None
    environ = os.environ if environ is None else environ
    if not torch.cuda.is_available():
        raise ArtifactLoadError(
            "This artifact was compiled for cuda and needs an NVIDIA GPU, but torch sees none here "
            "(torch.cuda.is_available() is False). Serve it on ml.g4dn / ml.g5 / ml.g6 / ml.g6e with the PyTorch "
            "GPU DLC, or recompile with --target cpu to run it on this machine."
        )
    count = torch.cuda.device_count()
    wanted = environ.get("SMNEURON_GPU_ID", "")
    index = int(wanted) % count if wanted.strip().isdigit() else 0
    return torch.device("cuda", index)


def load_weights(model_dir, spec, torch):
    """The shared parameters (name -> tensor) of an artifact that stores them once, else None."""
    if not spec:
        return None
    path = os.path.join(model_dir, spec["file"])
    try:
        return torch.load(path, map_location="cpu")
    except (IOError, OSError, RuntimeError) as e:
        raise ArtifactLoadError("Cannot load the shared weights %s: %s. Recompile the model." % (path, e))


def attach_weights(module, weights, how, torch):
    """Put the shared weights into one bucket's graph (saved without them)."""
    if how == "torch_neuronx.replace_weights":  # traced with inline_weights_to_neff=False
        import torch_neuronx

        torch_neuronx.replace_weights(module, weights)
        return
    for name, value in weights.items():
        target = module
        path = name.split(".")
        try:
            for part in path[:-1]:
                target = getattr(target, part)
            setattr(target, path[-1], torch.nn.Parameter(value, requires_grad=False))
        except (AttributeError, RuntimeError) as e:
            raise ArtifactLoadError(
                "The shared weight %s does not fit the traced graph (%s). Recompile the model." % (name, e)
            )


class LoadedArtifact(object):
    """Every bucket's traced module, the tokenizer and the manifest, ready to serve."""

    def __init__(self, model_dir):
        import torch
        from tokenizers import Tokenizer

        path = os.path.join(model_dir, "smneuron.json")
        try:
            with open(path) as f:
                manifest = json.load(f)
        except (IOError, OSError, ValueError) as e:
            raise ArtifactLoadError("Cannot read %s: %s. Is this a smneuron artifact?" % (path, e))
        if manifest.get("schema_version") != SCHEMA_VERSION:
            raise ArtifactLoadError(
                "smneuron.json has schema version %r; this inference code reads %d. Repackage "
                "the artifact with the smneuron that compiled it."
                % (manifest.get("schema_version"), SCHEMA_VERSION)
            )
        check_runtime(manifest)
        target = manifest["compiler"]["target"]
        if target in RUNTIME_PACKAGES and not os.environ.get("NEURON_RT_VISIBLE_CORES"):
            os.environ.setdefault("NEURON_RT_NUM_CORES", str(manifest["compiler"].get("cores_per_model", 1)))
        if target in RUNTIME_PACKAGES:
            __import__(RUNTIME_PACKAGES[target][1])  # registers neuron::forward before torch.jit.load

        self.manifest = manifest
        self.task = manifest["task"]
        self.batch_size = int(manifest["batch_size"])
        self.pad_id = int(manifest["pad_token_id"])
        self.with_token_types = "token_type_ids" in manifest["input_names"]
        self.labels = manifest.get("labels") or {}
        self.torch = torch
        self.device = select_device(manifest, torch)
        # several copies per worker (SMNEURON_MODELS_PER_WORKER) let forward passes overlap, as in the
        # FastAPI-on-Inferentia design; deploy bounds the count by accelerator and host memory
        # the weights are stored once (weights.pt) and shared by every bucket's graph and every copy
        weights = load_weights(model_dir, manifest.get("weights"), torch)
        self.copies = []  # one {seq_len: {batch_size: module}} per copy
        for _ in range(max(1, int(os.environ.get("SMNEURON_MODELS_PER_WORKER", "1") or 1))):
            by_seq = {}
            for b in manifest["buckets"]:
                module = torch.jit.load(os.path.join(model_dir, b["file"]))
                if weights is not None:
                    attach_weights(module, weights, manifest["weights"]["attach"], torch)
                if self.device is not None:
                    module = module.to(self.device)
                by_seq.setdefault(int(b["seq_len"]), {})[int(b.get("batch_size", self.batch_size))] = module
            self.copies.append(by_seq)
        self._executor = None
        self.buckets = sorted(self.copies[0].items())
        self.max_len = self.buckets[-1][0]
        self.tokenizer = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        self.tokenizer.no_padding()
        self.stats = {"forward_passes": 0, "rows": 0, "padded_rows": 0, "requests": 0}
        self.warm = False
        self.pass_seconds = {}  # (seq_len, batch) -> one pass, measured by warm_up where a bucket has several batches

    def tokenize(self, inputs, truncate_second):
        """Encodings truncated to the largest bucket (``enc.overflowing`` tells what was cut). A text is cut to what
        can reach the model before it is tokenized (``cap``): a 5 MB text costs what a bucket's worth does."""
        self.tokenizer.enable_truncation(
            self.max_len, strategy="only_second" if truncate_second else "longest_first"
        )
        inputs = [[self.cap(t) for t in x] if isinstance(x, (list, tuple)) else self.cap(x) for x in inputs]
        try:
            return self.tokenizer.encode_batch(inputs)
        except Exception as e:  # e.g. a QA question longer than the largest bucket
            raise RequestError(
                422,
                "cannot_tokenize",
                "The input cannot fit the largest bucket (%d tokens): %s" % (self.max_len, e),
            )

    def cap(self, text):
        """``text`` cut before tokenizing so that the first ``max_len`` tokens are unchanged and at least one more token
        remains (truncation and the ``truncation: false`` refusal both still see a too-long text): within a window of
        ``max_len * CHARS_PER_TOKEN`` characters, the cut falls after ``max_len + 1`` pre-tokenized words (each word is
        at least one token, and no normalizer joins words). A window that holds fewer words is one giant word; it is cut
        at the window's end (the one case where the last word's pieces may differ; such a word is [UNK] or split into
        far more than ``max_len`` pieces either way)."""
        window = self.max_len * CHARS_PER_TOKEN
        if not isinstance(text, str) or len(text) <= window:
            return text
        head = text[:window]
        pre = self.tokenizer.pre_tokenizer
        if pre is not None:
            words = pre.pre_tokenize_str(head)
            if len(words) > self.max_len + 1:
                return head[: words[self.max_len + 1][1][0]]
        return head

    def bucket_for(self, length):
        """(seq_len, {batch_size: module}) of the smallest bucket that fits ``length`` tokens."""
        for seq_len, modules in self.buckets:
            if length <= seq_len:
                return seq_len, modules
        return self.buckets[-1]

    def forward(self, encodings):
        """One output row per encoding: group by smallest fitting bucket, pad rows to the smallest
        compiled batch that fits, run as few forward passes as possible, cut the padding rows off.
        With several model copies per worker, the passes run concurrently, one per copy."""
        torch = self.torch
        out = [None] * len(encodings)
        groups = {}
        for i, enc in enumerate(encodings):
            groups.setdefault(self.bucket_for(len(enc.ids))[0], []).append(i)
        jobs = []  # (seq_len, batch, chunk)
        for seq_len, _ in self.buckets:
            members = groups.get(seq_len, [])
            start = 0
            for batch in self.cover(seq_len, len(members)):
                chunk = members[start : start + batch]
                start += len(chunk)
                jobs.append((seq_len, batch, chunk))

        def run(job_index):
            seq_len, batch, chunk = jobs[job_index]
            module = self.copies[job_index % len(self.copies)][seq_len][batch]
            ids = torch.full((batch, seq_len), self.pad_id, dtype=torch.long)
            mask = torch.zeros((batch, seq_len), dtype=torch.long)
            types = torch.zeros((batch, seq_len), dtype=torch.long)
            for row, i in enumerate(chunk):
                enc = encodings[i]
                n = len(enc.ids)
                ids[row, :n] = torch.tensor(enc.ids, dtype=torch.long)
                mask[row, :n] = 1
                types[row, :n] = torch.tensor(enc.type_ids, dtype=torch.long)
            args = (ids, mask, types) if self.with_token_types else (ids, mask)
            if self.device is not None:
                args = tuple(a.to(self.device, non_blocking=True) for a in args)
            with torch.no_grad():
                return module(*args).float().cpu()

        if len(self.copies) > 1 and len(jobs) > 1:
            results = list(self._pool().map(run, range(len(jobs))))
        else:
            results = [run(j) for j in range(len(jobs))]
        for (_, batch, chunk), result in zip(jobs, results):
            self.stats["forward_passes"] += 1
            self.stats["rows"] += len(chunk)
            self.stats["padded_rows"] += batch - len(chunk)
            for row, i in enumerate(chunk):
                out[i] = result[row]
        return out

    def _pool(self):
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(max_workers=len(self.copies))
        return self._executor

    def warm_up(self):
        """One forward pass per (copy, bucket, batch size), so no request pays a first-call cost; then, where a bucket
        has several batch sizes, the first copy's graphs run again and a third pass is timed: what ``cover`` weighs
        (a TorchScript graph's first runs profile and optimise it: they are not a pass's cost)."""
        for n, copy in enumerate(self.copies):
            for seq_len, modules in sorted(copy.items()):
                for batch, module in modules.items():
                    args = self._dummy(batch, seq_len)
                    with self.torch.no_grad():
                        module(*args)
                        if n == 0 and len(modules) > 1:
                            module(*args)
                            started = time.perf_counter()
                            module(*args)
                            self.pass_seconds[(seq_len, batch)] = time.perf_counter() - started
        self.warm = True

    def _dummy(self, batch, seq_len):
        torch = self.torch
        ids = torch.full((batch, seq_len), self.pad_id, dtype=torch.long)
        mask = torch.ones((batch, seq_len), dtype=torch.long)
        args = (ids, mask, torch.zeros_like(ids)) if self.with_token_types else (ids, mask)
        if self.device is not None:
            args = tuple(a.to(self.device) for a in args)
        return args

    def cover(self, seq_len, rows):
        """The compiled batch sizes that run ``rows`` rows of one bucket: full batches of the largest, and the rest
        on the smallest batch that fits (padding rows), or, where the warm-up measured it at least 20% cheaper
        (a CPU, where a pass costs about its rows), on several smaller batches (say 3 x batch 1 for 3 rows)."""
        sizes = sorted(self.copies[0][seq_len])
        full, rest = divmod(rows, sizes[-1])
        plan = [sizes[-1]] * full
        if not rest:
            return plan
        padded = [next(b for b in sizes if b >= rest)]
        cost = dict((b, self.pass_seconds.get((seq_len, b))) for b in sizes)
        if len(sizes) == 1 or None in cost.values():
            return plan + padded
        smaller = [
            b for b in sizes if b < padded[0]
        ]  # a split runs on smaller graphs only, never a larger one
        if not smaller:
            return plan + padded
        best = {
            0: (0.0, [])
        }  # rows -> (seconds, batches): the cheapest cover of that many rows by smaller graphs
        for n in range(1, rest + 1):
            best[n] = min((best[max(0, n - b)][0] + cost[b], best[max(0, n - b)][1] + [b]) for b in smaller)
        split = best[rest]
        return plan + (split[1] if split[0] < 0.8 * cost[padded[0]] else padded)
