"""One writer at a time per index (issue 62, defect 2): the writer lock across processes and threads."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from retriever.storage.index_lock import WRITE_LOCK_FILE, IndexWriterBusyError, WriterLock

HOLDER = """
import fcntl, sys, time
handle = open(sys.argv[1], "a")
fcntl.flock(handle, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


@contextmanager
def held_by_another_process(directory: Path, seconds: float = 60) -> Iterator[subprocess.Popen[str]]:
    directory.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-c", HOLDER, str(directory / WRITE_LOCK_FILE), str(seconds)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "held"
        yield process
    finally:
        process.kill()
        process.wait()


def test_a_second_process_waits_then_gives_up_with_a_sentence(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path, wait_s=0.6)
    told: list[str] = []
    with held_by_another_process(tmp_path):
        assert lock.held_elsewhere()
        started = time.monotonic()
        busy = pytest.raises(IndexWriterBusyError, match="another ingest is writing the index")
        with busy as raised, lock.hold(on_wait=lambda: told.append("waiting")):
            pytest.fail("held while another process holds it")
        assert 0.5 < time.monotonic() - started < 5
    assert told == ["waiting"]  # said once, not at every poll
    assert str(tmp_path) in str(raised.value) and "writer_wait_s" in str(raised.value)


def test_the_waiter_goes_on_as_soon_as_the_other_writer_ends(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path, wait_s=30)
    with held_by_another_process(tmp_path, seconds=1.0) as holder:
        started = time.monotonic()
        with lock.hold():
            waited = time.monotonic() - started
            assert holder.poll() is not None or waited >= 0.5  # it waited for the holder's end
    assert waited < 10
    assert not lock.held_elsewhere()


def test_the_lock_is_reentrant_for_its_owner_and_released_at_the_outermost_end(tmp_path: Path) -> None:
    lock, other = WriterLock(tmp_path, wait_s=0), WriterLock(tmp_path, wait_s=0)
    with lock.hold():
        with lock.hold():  # an ingest's batches inside the ingest's hold
            assert not lock.held_elsewhere()  # the owner's own write
            assert other.held_elsewhere()
        assert other.held_elsewhere()  # still held: the outer hold has not ended
        with pytest.raises(IndexWriterBusyError), other.hold():
            pass
    with other.hold():
        assert lock.held_elsewhere()


def test_another_thread_waits_for_the_writing_thread(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path, wait_s=10)
    order: list[str] = []

    def second_writer() -> None:
        with lock.hold():
            order.append("second")

    with lock.hold():
        thread = threading.Thread(target=second_writer)
        thread.start()
        time.sleep(0.3)  # the second thread is waiting by now
        assert lock.held_elsewhere() is False  # asked from the writing thread itself
        order.append("first")
    thread.join(10)
    assert order == ["first", "second"]


def test_a_thread_that_waits_past_the_deadline_gets_the_error(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path, wait_s=0.3)
    errors: list[BaseException] = []

    def second_writer() -> None:
        try:
            with lock.hold():
                pass
        except IndexWriterBusyError as error:
            errors.append(error)

    with lock.hold():
        thread = threading.Thread(target=second_writer)
        thread.start()
        thread.join(10)
    assert len(errors) == 1
