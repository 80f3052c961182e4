"""How smneuron shows itself to a person: progress of long steps (a line in a terminal, an HTML bar in a
notebook, nothing in a pipe) and the short ``__repr__`` / ``_repr_html_`` of what a notebook prints.

Modules: ``progress`` (``step()``, ``configure()``), ``cards`` (the ``Displayed`` mixin and HTML helpers).

May import: nothing of smneuron (it sits under every other package, beside errors and session).
"""
