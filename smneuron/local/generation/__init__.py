"""Text generation on this machine: the stand-in of the optimum-neuron vLLM container, one copy as a
process (the stand-in or vLLM's own server), and a scripted streaming server for benchmark clients.
"""
