"""What answers invocations, and the servers behind endpoints: see README.md beside this file.

``routing`` decides where an InvokeEndpoint goes and answers SageMaker's refusals; ``stream_route`` is InvokeEndpointWithResponseStream as AWS event-stream frames and answers every changing request once it is on disk; ``openai_route`` relays SageMaker's /openai/v1; ``capture`` writes DataCaptureConfig's sample. ``backing`` runs an endpoint's instances as local model servers (health-checked, replaced), ``component_backing`` each inference-component copy, ``log_shipping`` their output into the embedded CloudWatch Logs.
"""
