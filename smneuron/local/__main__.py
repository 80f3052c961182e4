"""`python -m smneuron.local ...`: the embedded SageMaker's service process, as `smneuron local up` starts it."""

import smneuron.fast_exit  # (the service ends without a last collection of moto's objects)
import smneuron.startup.gc_pause  # noqa: F401  (no collections while it sets up; serve() calls fast_exit.freeze() when ready)
from smneuron.local.service_process import main

main()
