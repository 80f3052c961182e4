"""Stand-in for optimum-neuron (tests only): see optimum/commands/optimum_cli.py and cache/hub_cache.py."""

__version__ = "0.4.5"
