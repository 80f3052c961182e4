"""The SageMaker hosting contract on this machine: the model server behind local endpoints.

``server.LocalEndpoint`` extracts a model.tar.gz the way the DLC does and serves GET /ping and POST
/invocations with one worker process per simulated NeuronCore and TorchServe-style dynamic batching, through
the production handler in ``inference_code/``. ``torchserve`` runs the DLC's own TorchServe + toolkit.
This is not only for local use: the evaluation's CPU reference outputs (in the pipeline's jobs too) come
from it, which is why it sits below evaluation/ and outside local/.

May import: errors, session, catalog, specs, artifact, container, compilation, endpoints.
"""
