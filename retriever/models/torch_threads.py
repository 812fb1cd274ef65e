"""Torch's CPU threads for a short piece of work.

A query is a dozen tokens: a second thread gains nothing on it, and when the other core is busy
(another search, a background job) torch's thread pool waits for that core at each of a forward pass's
hundreds of steps (all-MiniLM-L6-v2: 480 ms a query instead of 17 on this 2-CPU machine).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Torch's intra-op threads set to ``threads`` for the calling thread while the block runs (None: as
    they are). With OpenMP (torch's CPU wheels) the count is each thread's own, so searches running in
    other threads keep theirs; threads started meanwhile may start with ``threads`` (speed only)."""
    if threads is None:
        yield
        return
    import torch

    previous = torch.get_num_threads()
    if previous == threads:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
