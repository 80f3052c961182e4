"""Compile a model into an artifact directory: the one entry ``compile_model`` decides the kind.

Modules: ``entry`` (``compile_model``, re-exported here), ``encoder`` (TorchScript per sequence bucket, validated against eager outputs), ``generation``
(optimum-neuron's export for inf2, a served copy for cpu, the optimum-neuron cache), ``targets`` (cpu / inf1
/ inf2 trace calls; Neuron packages imported lazily), ``tasks`` (per-task loading and traceable wrappers),
``cache`` (content-keyed compile cache).

May import: errors, session, catalog, specs, artifact.
"""

from smneuron.compilation.entry import compile_model

__all__ = ["compile_model"]
