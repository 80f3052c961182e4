"""The scheduled SageMaker Pipeline: plan (no SDK), build (the SDK, in pipelines/definition.py), upsert,
start, status, schedules, and the smneuron wheel its jobs install.

May import: everything below it: errors, session, catalog, specs, artifact, container, compilation, endpoints,
deployment, serving, benchmark, hardware, evaluation.
"""
