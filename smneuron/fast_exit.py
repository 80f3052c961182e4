"""smneuron's own processes end without CPython's last garbage collection over everything they imported, and
collect without going over it again while they run.

At exit CPython collects every object still alive. A process that imported torch and transformers spends about
1 s of CPU there after its work is done and its output written (measured here: `python -c "import torch,
transformers, transformers.modeling_utils"` takes 4.3 s of CPU, 3.4 s with this); the embedded SageMaker with
moto 0.5 s. Importing this module registers ``gc.freeze`` as an exit handler (a module runs once per process),
so the objects left are never traversed.
The other exit handlers, logging's shutdown, the flushes of stdout and stderr and ``weakref.finalize`` callbacks
all still run; only objects kept alive by reference cycles are not finalized, which CPython does not promise at
exit either.

Installed by the processes smneuron starts (the CLI, the embedded SageMaker's service, the forkservers its
model servers, copies, jobs and compiles fork from, the DLC stack's launcher), never by `import smneuron`: a
notebook or a user's program ends as Python ends it. An import, not a call, so that a forkserver's preload (a list of
module names) can name it.

Importing it also moves what the process has imported so far out of the collector's reach (``freeze``): a full
collection goes over every object alive, and a process holding torch and transformers (millions of objects) spent
0.3-0.5 s of CPU on each one, over and over while it worked (a test process: 15-17 full collections, 6-8 s, in a
65 s run). A forkserver names this module last in its preload, so every process it forks (model-server workers,
copies, jobs, bucket compiles) starts with its imports frozen; ``gc.freeze`` before a fork is what CPython's own
documentation recommends, as it keeps the collector from writing to the pages the children share. A long-lived
process calls ``freeze()`` again once it has set itself up (the embedded SageMaker, when it is ready). What is
frozen is still freed when its last reference goes; only a reference cycle among frozen objects stays, as at exit.
"""

from __future__ import annotations

import atexit
import gc

atexit.register(gc.freeze)  # exit handlers run last-registered first: this one late, after theirs


def freeze() -> None:
    """Keep every object alive now out of future collections (``gc.freeze``): what a process imported and set up
    lives as long as it does, and a full collection need not go over it again. It also ends a set-up that
    ``smneuron.startup.gc_pause`` paused: the collector runs again from here."""
    gc.freeze()
    gc.enable()


freeze()
