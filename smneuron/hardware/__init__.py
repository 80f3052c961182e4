"""Choose hardware by measurement: one model compiled per target, deployed on each instance type, benched alike.

A workflow above ``deployment`` and ``benchmark`` (it compiles, deploys and deletes), not a part of either.
Modules: ``workflow`` (``compare_instances`` / ``smneuron compare``: compile per family target, deploy every type,
settle, the same load against each in turn, delete; what could not be compiled, deployed or served stays in the
report with its reason), ``loads`` (what each kind of model gets in that loop: ``EncoderLoad`` / ``GenerationLoad``),
``report`` (``Comparison``: rows, the recommendation, JSON, HTML, plot, card) and ``generation_report``
(``GenerationComparison``: the same in output tokens, TTFT and ITL).

May import: errors, session, display, catalog, specs, artifact, compilation, endpoints, deployment, benchmark.
"""
