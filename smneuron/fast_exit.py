"""smneuron's own processes end without CPython's last garbage collection over everything they imported.

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
"""

from __future__ import annotations

import atexit
import gc

atexit.register(gc.freeze)  # exit handlers run last-registered first: this one late, after theirs
