"""Accuracy of a compiled model against its fp32 CPU reference: records, outputs, metrics, gates.

``scoring`` is what `smneuron evaluate` and the pipeline's compile / evaluate jobs use.

May import: errors, session, catalog, specs, artifact, container, compilation, endpoints, serving.
"""
