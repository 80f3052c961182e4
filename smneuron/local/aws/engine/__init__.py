"""moto, and every change smneuron makes to it: see README.md beside this file.

``embedded`` starts moto's server behind the gate and applies the extensions; ``patching`` records each change (replaces, adds, requires) and refuses to start on a moto that moved; ``hooks`` tie moto's endpoint lifecycle, List/Describe and InvokeEndpoint to the model servers; the rest are SageMaker operations moto lacks or answers wrongly: inference components, describe shapes, IAM's policy simulation, instance pools, benchmark jobs, and changes made for speed alone.
"""
