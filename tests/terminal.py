"""A child process that takes Ctrl-C as it would in a terminal.

A suite started in the background of a script (``cmd &`` without job control) runs with SIGINT ignored, as bash sets
it for such jobs, and every process it starts inherits that: CPython then keeps SIGINT ignored, so a test's SIGINT
would be lost and the command would run on. A terminal never hands a command an ignored SIGINT.
"""

from __future__ import annotations

import signal


def ctrl_c_as_in_a_terminal() -> None:
    """``preexec_fn`` for a command a test interrupts: SIGINT back to its default before the command starts."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
