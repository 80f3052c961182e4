"""The embedded AWS: moto on loopback, extended where it lags SageMaker, and backed by real servers.

Modules: ``embedded`` (moto server / in-process, the documented extensions), ``components`` (inference
components in moto), ``hooks`` (moto's endpoint lifecycle, List/Describe and InvokeEndpoint reporting to the
active backer), ``backing`` (an InService endpoint is local model server processes, health-checked),
``component_backing`` (each inference-component copy is a local text-generation server), ``routing``
(InvokeEndpoint: where an invocation goes, SageMaker's refusals), ``stream_route``
(InvokeEndpointWithResponseStream as AWS event-stream frames), ``log_shipping`` (model server output into the
embedded CloudWatch Logs).
"""
