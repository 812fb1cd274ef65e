"""Parsing papers in worker processes, each with a time limit, results in submission order.

pebble's pool kills a worker that runs over its time limit (a ``concurrent.futures`` pool cannot),
so one pathological paper costs its time limit and nothing more. Workers are spawned, not forked:
the caller may hold threads (Chroma, torch) that a fork would copy mid-lock.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, TimeoutError
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pebble import ProcessExpired, ProcessPool

from ingestion.latex_ingestor import PaperStatements

Item = TypeVar("Item")


@dataclass
class PoolOutcome(Generic[Item]):
    item: Item
    result: PaperStatements | None
    error: str = ""  # why there is no result: over time, worker died, parser bug


def parse_in_pool(
    items: Iterable[Item],
    task: Callable[[Item], tuple[Callable[..., PaperStatements], tuple[Any, ...]]],
    workers: int,
    timeout_s: float,
) -> Iterator[PoolOutcome[Item]]:
    """Run ``task(item)`` (a function and its arguments) for each item, at most ``2 * workers`` in flight."""
    in_flight: deque[tuple[Item, Future[PaperStatements]]] = deque()
    with ProcessPool(max_workers=workers, context=multiprocessing.get_context("spawn")) as pool:
        for item in items:
            function, arguments = task(item)
            in_flight.append((item, pool.schedule(function, args=arguments, timeout=timeout_s)))
            while len(in_flight) >= 2 * workers:
                yield _collect(*in_flight.popleft(), timeout_s)
        while in_flight:
            yield _collect(*in_flight.popleft(), timeout_s)


def _collect(item: Item, future: Future[PaperStatements], timeout_s: float) -> PoolOutcome[Item]:
    try:
        return PoolOutcome(item, future.result())
    except TimeoutError:
        return PoolOutcome(item, None, f"parsing took longer than {timeout_s:g} s")
    except ProcessExpired as error:
        return PoolOutcome(item, None, f"parser process died (exit code {error.exitcode})")
    except Exception as error:  # a bug on one paper must not end the run
        return PoolOutcome(item, None, f"parser error: {type(error).__name__}: {error}")
