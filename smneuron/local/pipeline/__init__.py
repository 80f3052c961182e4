"""`smneuron pipeline run`: the pipeline's own definition executed on this machine
(graph order, inputs checked and uploaded, jobs as subprocesses, conditions evaluated).
"""
