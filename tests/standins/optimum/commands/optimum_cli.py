"""Stand-in for `optimum-cli` (optimum.commands.optimum_cli): `export neuron` for text generation.

Checks the arguments the way optimum-neuron's parser does (parse_args_neuronx: --instance_type choices,
--torch_dtype choices, --num_cores as an alias of --tensor_parallel_size, the output directory positional),
records them in $SMNEURON_STANDIN_LOG, and writes what an export leaves: the model's config and tokenizer
files, a neuron_config.json with the compiled configuration (target "trn1" for inf2, as optimum-neuron
normalizes it) and the keys NeuronConfig.to_dict adds at v0.4.5 (``_serialized_key``, ``optimum_neuron_version``: this
stand-in's 0.4.5, ``neuronxcc_version``: the neuronx-cc 0.4.5 pins, 2.21.33363.0, or $SMNEURON_STANDIN_NEURONXCC as
another compiler would write), and a placeholder compiled model. $SMNEURON_STANDIN_FAIL makes it fail like a
compiler error.
"""

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _record import record

INSTANCE_VALUE_MAP = {"trn1": "trn1", "trn1n": "trn1", "inf2": "trn1", "trn2": "trn2"}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] != ["export", "neuron"]:
        print(f"optimum-cli stand-in: only `export neuron` is implemented, got {argv[:2]}", file=sys.stderr)
        return 2
    p = argparse.ArgumentParser(prog="optimum-cli export neuron")
    p.add_argument("-m", "--model", required=True)
    p.add_argument("output", type=Path)
    p.add_argument("--task", default="auto")
    p.add_argument("--instance_type", choices=list(INSTANCE_VALUE_MAP), required=True)
    p.add_argument("--torch_dtype", default="float32", choices=["bfloat16", "float16", "float32"])
    p.add_argument("--tensor_parallel_size", type=int, default=1)
    p.add_argument("--num_cores", type=int, dest="tensor_parallel_size")
    p.add_argument("--batch_size", type=int)
    p.add_argument("--sequence_length", type=int)
    args = p.parse_args(argv[2:])
    record(
        {
            "function": "optimum-cli export neuron",
            "argv": argv,
            "parsed": {k: str(v) for k, v in vars(args).items()},
        }
    )
    if os.environ.get("SMNEURON_STANDIN_FAIL"):
        print("neuronx-cc: ERROR: compilation failed (stand-in)", file=sys.stderr)
        return 1
    src = Path(args.model)
    if not (src / "config.json").is_file():
        print(f"OSError: {src} does not appear to have a file named config.json.", file=sys.stderr)
        return 1
    args.output.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.is_file() and (f.name.endswith((".json", ".model", ".txt", ".jinja", ".safetensors"))):
            shutil.copyfile(f, args.output / f.name)
    neuron_config = {
        "batch_size": args.batch_size,
        "sequence_length": args.sequence_length,
        "tp_degree": args.tensor_parallel_size,
        "torch_dtype": args.torch_dtype,
        "target": INSTANCE_VALUE_MAP[args.instance_type],
        "_serialized_key": "NxDNeuronConfig",
        "optimum_neuron_version": "0.4.5",
        "neuronxcc_version": os.environ.get("SMNEURON_STANDIN_NEURONXCC", "2.21.33363.0"),
    }
    (args.output / "neuron_config.json").write_text(json.dumps(neuron_config, indent=2))
    (args.output / "model.pt").write_bytes(b"stand-in compiled model")
    return 0


if __name__ == "__main__":
    sys.exit(main())
