"""Parsing papers in worker processes, each with a time limit, results in submission order.

pebble's pool kills a worker that runs over its time limit (a ``concurrent.futures`` pool cannot),
so one pathological paper costs its time limit and nothing more. Workers are spawned, not forked:
the caller may hold threads (Chroma, torch) that a fork would copy mid-lock.
"""

from __future__ import annotations

import multiprocessing
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, TimeoutError
from dataclasses import dataclass
from multiprocessing.sharedctypes import Synchronized
from typing import Any, Generic, TypeVar

from pebble import ProcessExpired, ProcessPool

from ingestion.latex_ingestor import PaperStatements

Item = TypeVar("Item")


@dataclass
class PoolOutcome(Generic[Item]):
    item: Item
    result: PaperStatements | None
    error: str = ""  # why there is no result: over time, worker died, parser bug
    worker_replaced: bool = False  # its worker was killed (over time) or died: the pool starts another


def parse_in_pool(
    items: Iterable[Item],
    task: Callable[[Item], tuple[Callable[..., PaperStatements], tuple[Any, ...]]],
    workers: int,
    timeout_s: float,
) -> Iterator[PoolOutcome[Item]]:
    """Run ``task(item)`` (a function and its arguments) for each item, at most ``2 * workers`` in flight."""
    in_flight: deque[tuple[Item, Future[PaperStatements]]] = deque()
    context = multiprocessing.get_context("spawn")
    started = context.Value("i", 0)  # workers past their start (see _wait_for_starting_workers)
    # the pool starts its workers all at once at its first task (none without one), and replaces each one it kills
    # or loses
    spawned = 0
    with ProcessPool(max_workers=workers, context=context, initializer=_count_start, initargs=(started,)) as pool:
        for item in items:
            spawned = spawned or workers
            function, arguments = task(item)
            in_flight.append((item, pool.schedule(function, args=arguments, timeout=timeout_s)))
            while len(in_flight) >= 2 * workers:
                outcome = _collect(*in_flight.popleft(), timeout_s)
                spawned += outcome.worker_replaced
                yield outcome
        while in_flight:
            outcome = _collect(*in_flight.popleft(), timeout_s)
            spawned += outcome.worker_replaced
            yield outcome
        _wait_for_starting_workers(started, spawned)


def _count_start(started: Synchronized[int]) -> None:
    with started.get_lock():
        started.value += 1


def _wait_for_starting_workers(started: Synchronized[int], spawned: int, limit_s: float = 30.0) -> None:
    """Closing the pool unlinks the semaphores of its channel; a worker still starting (a spawned process
    takes a second or more to import, longer on busy cores) then fails to open them and prints a
    ``FileNotFoundError`` traceback from ``SemLock._rebuild`` on the user's terminal.
    So the pool is closed only once every worker it spawned is past its start (the initializer runs after
    the channel is opened). Bounded: a worker that never starts does not hold the ingest."""
    deadline = time.monotonic() + limit_s
    while started.value < spawned and time.monotonic() < deadline:
        time.sleep(0.05)


def _collect(item: Item, future: Future[PaperStatements], timeout_s: float) -> PoolOutcome[Item]:
    try:
        return PoolOutcome(item, future.result())
    except TimeoutError:
        return PoolOutcome(item, None, f"parsing took longer than {timeout_s:g} s", worker_replaced=True)
    except ProcessExpired as error:
        return PoolOutcome(item, None, f"parser process died (exit code {error.exitcode})", worker_replaced=True)
    except Exception as error:  # a bug on one paper must not end the run
        return PoolOutcome(item, None, f"parser error: {type(error).__name__}: {error}")
