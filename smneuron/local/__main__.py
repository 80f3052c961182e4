"""`python -m smneuron.local ...`: the embedded SageMaker's service process, as `smneuron local up` starts it."""

import smneuron.fast_exit  # noqa: F401  (the service ends without a last collection of moto's objects)
from smneuron.local.service_process import main

main()
