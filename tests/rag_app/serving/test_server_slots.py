"""The LLM server's slots, counted across processes (units; the two real processes: tests/rag_app/api/
test_shared_llm_server.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import retriever.deadline as request_deadline
from rag_app.serving.server_slots import ServerSlots, SlotWaitError
from tests.processes import read_line

URL = "http://127.0.0.1:8080/v1"


def most_at_once(slots: list[ServerSlots], hold_s: float = 0.15) -> int:
    """Run one request through each ``slots`` (one per would-be process) at once; the most that overlapped."""
    running = most = 0
    lock = threading.Lock()

    def request(own: ServerSlots) -> None:
        nonlocal running, most
        with own.held(30):
            with lock:
                running += 1
                most = max(most, running)
            time.sleep(hold_s)
            with lock:
                running -= 1

    threads = [threading.Thread(target=request, args=(own,)) for own in slots]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return most


def test_owners_of_one_server_take_turns_and_other_servers_do_not_wait(tmp_path: Path) -> None:
    # Each ServerSlots stands for one process (its own in-process count); the files are shared.
    assert most_at_once([ServerSlots(URL, 1, tmp_path) for _ in range(3)]) == 1
    assert most_at_once([ServerSlots(URL, 2, tmp_path) for _ in range(4)]) == 2
    other = "http://127.0.0.1:9090/v1"
    assert most_at_once([ServerSlots(URL, 1, tmp_path), ServerSlots(other, 1, tmp_path)]) == 2


def test_a_process_killed_while_holding_a_slot_frees_it(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from rag_app.serving.server_slots import ServerSlots\n"
         f"slots = ServerSlots({URL!r}, 1, Path({str(tmp_path)!r}))\n"
         "with slots.held(30):\n    print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )  # fmt: skip
    try:
        assert holder.stdout is not None and read_line(holder.stdout, 60).strip() == "held"
        took: list[float] = []
        waiter = threading.Thread(target=lambda: took.append(_time_to_hold(ServerSlots(URL, 1, tmp_path))))
        waiter.start()
        time.sleep(0.3)
        assert not took, "the slot is held by the other process"
        holder.kill()
        waiter.join(10)
        assert took, "the killed process's slot came free"
    finally:
        holder.kill()
        holder.wait()


def _time_to_hold(slots: ServerSlots) -> float:
    started = time.monotonic()
    with slots.held(30):
        return time.monotonic() - started


def test_a_server_has_at_least_one_slot(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one slot"):
        ServerSlots(URL, 0, tmp_path)


def stops_waiting_at_the_request_deadline(waiter: ServerSlots) -> None:
    """A wait for a slot of ``waiter`` within a served request's deadline 0.1 s away ends with it, not at 30 s."""
    started = time.monotonic()
    with (
        pytest.raises(request_deadline.DeadlinePassedError),
        request_deadline.within(time.monotonic() + 0.1),
        waiter.held(30),
    ):
        pass
    assert time.monotonic() - started < 2


def test_every_wait_for_a_slot_has_a_deadline(tmp_path: Path) -> None:
    holder = ServerSlots(URL, 1, tmp_path)
    waiter = ServerSlots(URL, 1, tmp_path)  # another process's, say
    with holder.held(5):
        started = time.monotonic()
        with pytest.raises(SlotWaitError, match="stayed busy"), waiter.held(0.3):
            pass
        assert 0.25 < time.monotonic() - started < 2
        # A served request past its own deadline stops waiting at once (retriever.deadline).
        stops_waiting_at_the_request_deadline(waiter)
    with waiter.held(1):  # given back: free again
        pass


def test_a_served_request_past_its_deadline_stops_waiting_for_a_slot_of_its_own_process(tmp_path: Path) -> None:
    # The slot held by another thread of this process (an answer, while a search asks the LLM for a rewrite):
    # the wait for the process's own count used to last the whole ``wait_s``, past the request's deadline.
    slots = ServerSlots(URL, 1, tmp_path)
    held, done = threading.Event(), threading.Event()

    def answer() -> None:
        with slots.held(5):
            held.set()
            done.wait(10)

    holder = threading.Thread(target=answer)
    holder.start()
    try:
        assert held.wait(10)
        stops_waiting_at_the_request_deadline(slots)
    finally:
        done.set()
        holder.join(10)
