"""A process smneuron starts sets itself up without garbage collections: importing this module pauses the collector,
and ``fast_exit.freeze()`` ends the set-up (what was set up is frozen, and the collector runs again).

While a process imports torch, transformers or moto and builds what it keeps for its whole life, CPython's collector
runs again and again over a heap that only grows: every object it finds is still alive. Measured here with
``gc.callbacks``: a forkserver's preload spent 0.15 s of CPU in collections for torch alone and 0.9 s for torch and
transformers (a quarter of the import), the embedded SageMaker 0.6 s before it was ready. A forkserver's preload names
this module first and ``smneuron.fast_exit`` last; the embedded SageMaker imports it before its engine and calls
``fast_exit.freeze()`` once it answers. A set-up that fails ends the process, so nothing runs long with collections
paused. Never imported by ``import smneuron``: a notebook or a user's program collects as Python does.
"""

from __future__ import annotations

import gc

gc.disable()
