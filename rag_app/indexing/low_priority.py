"""An ingest gives way to the answering LLM: it runs at a lowered CPU priority, in a session of its own
(bench/results/ask_under_load.md)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path

# Exit codes (README, "Exit codes"): scripts tell these apart.


def lower_priority(nice: int) -> None:
    """An ingest gives way to the chat's LLM server on the same CPUs: llama.cpp's threads wait for each
    other at every layer, so one descheduled thread stalls the rest (the quoting answer took 13 s idle
    and 41 s beside an ingest on 2 CPUs). A process's nice value alone did not help (41 s): Linux
    shares the CPUs between sessions first ("autogroups"), and the LLM server runs in a session of its
    own. So the ingest continues in a child in a new session whose group is niced; the parent waits,
    passes on the signals a terminal sends, and exits with the child's status. Parser processes
    inherit the priority. Without autogroups (or off Linux) the process's own nice value is lowered."""
    if nice <= 0 or not hasattr(os, "nice"):
        return
    autogroup = Path("/proc/self/autogroup")
    if not autogroup.exists():
        os.nice(nice)
        return
    child = os.fork()
    if child == 0:
        die_with_parent()  # a kill -9 of the command a user started stops the ingest too
        os.setsid()
        with contextlib.suppress(OSError):
            autogroup.write_text(str(nice))
        os.nice(nice)
        return
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda received, _frame: os.kill(child, received))
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    sys.stdout.flush()
    os._exit(os.waitstatus_to_exitcode(status))


def die_with_parent() -> None:
    """Linux's PR_SET_PDEATHSIG: this process gets SIGKILL when its parent dies (the parent cannot pass
    on a SIGKILL)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
