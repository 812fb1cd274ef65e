"""Reading from a child process with a deadline: a test that waits on another process never waits forever."""

from __future__ import annotations

import selectors
import time
from typing import IO


def read_line(stream: IO[str], seconds: float) -> str:
    """The next line ``stream`` (a child's pipe) writes, within ``seconds``; AssertionError past them."""
    ends = time.monotonic() + seconds
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        while not selector.select(timeout=max(0.0, ends - time.monotonic())):
            if time.monotonic() >= ends:
                raise AssertionError(f"the child process wrote no line within {seconds:g} s")
    return stream.readline()
