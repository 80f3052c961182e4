"""The serving contract: the environment each serving image reads, computed from an artifact and a request.

Modules: ``encoder_env`` (the PyTorch DLC's TorchServe + SageMaker toolkit variables: workers per NeuronCore / per
2 vCPUs / per GPU, threads, batching, the handler), ``generation_env`` (the optimum-neuron vLLM container's
``SM_ON_*`` variables, from ``GenerationConfig``: the one holder of batch, sequence length and tensor parallel size).
Below ``deployment``, ``serving`` and ``pipeline``: each of them sets up a container and must agree.

May import: errors, catalog, specs, artifact.
"""
