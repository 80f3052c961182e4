"""Everything that runs smneuron without AWS or Inferentia: the embedded AWS and what backs it.

Packages: ``aws`` (the embedded SageMaker, S3, ... on loopback), ``generation`` (local text-generation
servers), ``pipeline`` (local pipeline runs). Modules: ``service`` (`smneuron local up | down | status`),
``demo`` and ``demo_generation`` (`smneuron demo`), ``tiny_model`` (the tiny BERT of the demo and tests).

May import: every core package. Nothing in the core imports this package (only cli/ does).
"""
