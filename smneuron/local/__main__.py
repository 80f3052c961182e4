"""`python -m smneuron.local ...`: the embedded SageMaker's service process, as `smneuron local up` starts it."""

from smneuron.local.service import main

main()
