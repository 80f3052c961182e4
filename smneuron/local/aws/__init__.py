"""The embedded AWS: moto on loopback, extended where it lags SageMaker, and backed by real servers.

Modules: ``embedded`` (moto server / in-process, the documented extensions), ``components`` (inference
components in moto), ``backing`` (an InService endpoint is a local endpoint process), ``component_backing``
(each inference-component copy is a local text-generation server), ``routing`` (InvokeEndpoint: where an invocation goes, SageMaker's refusals),
``stream_route`` (InvokeEndpointWithResponseStream as AWS event-stream frames).
"""
