"""Everything that runs smneuron without AWS or Inferentia: the local endpoint and the embedded AWS."""
