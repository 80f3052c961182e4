"""The PyTorch DLC's entry point (``serving.main()`` of sagemaker-pytorch-inference), adapted to a host that
runs several model servers: ``python -m smneuron.serving.ts_launch`` in the stack's base directory.

A container holds one TorchServe, and the toolkit counts on it in two places; on this machine several stacks
(endpoints, instances, tests) share one host, so both are scoped to the stack, nothing else changes:
- the generated TorchServe config goes to ``./sagemaker-ts.properties`` instead of /etc/sagemaker-ts.properties;
- the TorchServe process the toolkit waits on is the one serving this stack's model store, where the toolkit
  looks at every process on the machine and gives up with "multiple ts model servers are not supported".
"""

from __future__ import annotations

import os
import time

import psutil
from sagemaker_pytorch_serving_container import serving
from sagemaker_pytorch_serving_container import torchserve as toolkit

import smneuron.fast_exit  # noqa: F401  (the launcher ends without a last collection of torch's objects)


def _this_stacks_torchserve() -> psutil.Process:
    """The toolkit's ``_retrieve_ts_server_process``, for this stack's TorchServe only (10 s, as it retries)."""
    deadline = time.monotonic() + 10
    while True:
        for process in psutil.process_iter():
            try:
                if process.status() != psutil.STATUS_ZOMBIE:
                    cmdline = process.cmdline()
                    if toolkit.TS_NAMESPACE in cmdline and toolkit.MODEL_STORE in " ".join(cmdline):
                        return process
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        if time.monotonic() > deadline:
            raise Exception("Torchserve model server was unsuccessfully started")
        time.sleep(0.5)


def main() -> None:
    toolkit.TS_CONFIG_FILE = os.path.join(os.getcwd(), "sagemaker-ts.properties")
    toolkit._retrieve_ts_server_process = _this_stacks_torchserve
    serving.main()


if __name__ == "__main__":
    main()
