"""An answer streamed to an asynchronous front end (``/v1/ask/stream``), read by one deadline to its end.

The model's chunks come from a blocking iterator (the LLM client's stream), so each is read in a worker
thread. Each read runs :func:`~retriever.deadline.run_within` the request's deadline, as every search stage
does, so the answer itself sees the deadline: past it, :class:`~rag_app.answering.answer.AnswerStream`
closes the LLM's stream at its next chunk and stops, instead of letting the model write on.
:meth:`StreamedAnswer.close` waits for the read in progress to end, closes the stream, and only
then gives the turn at the LLM back: a turn given back is a server that is free. A read that outlasts the wait
keeps the turn until it ends: while the read runs the server is not free, and its generator cannot be closed
("generator already executing").
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from rag_app.answering.answer import Answer, AnswerStream, AnswerUpdate
from retriever.deadline import run_within

if TYPE_CHECKING:
    from retriever import SearchHit

_END = object()

logger = logging.getLogger(__name__)


class StreamedAnswer:
    """The answer's sources at once, then its chunks (``async for``), then :meth:`result`; :meth:`close`
    always (it runs once, however the reading ended)."""

    def __init__(
        self,
        stream: AnswerStream,
        release: Callable[[], None],
        deadline: float,
        late: Callable[[str], TimeoutError],
        close_wait_s: float,
    ) -> None:
        self.stream = stream
        self.deadline = deadline
        self._release = release
        self._late = late  # the backend's error for a request past its deadline
        # The longest a read in progress can take to end: one wait of the LLM client for more text.
        self._close_wait_s = close_wait_s
        self._chunks: Iterator[str | AnswerUpdate] = stream.events()
        self._reading: asyncio.Future[object] | None = None
        self._closed = False
        self._released = False
        self._late_close: asyncio.Task[None] | None = None  # the close that waits for a read outlasting the wait
        # set when the reading is closed early (its client left): the model's stream stops at its next chunk,
        # where the choice of a quote reads it whole inside one read (without it the model wrote on for 15 s)
        self._left = threading.Event()

    @property
    def sources(self) -> list[SearchHit]:
        return self.stream.sources

    @property
    def next_results(self) -> list[SearchHit]:
        return self.stream.next_results

    def __aiter__(self) -> StreamedAnswer:
        return self

    async def __anext__(self) -> str | AnswerUpdate:
        chunk = await self._in_thread(functools.partial(next, self._chunks, _END), "wrote the answer")
        if chunk is _END:
            raise StopAsyncIteration
        return chunk  # type: ignore[return-value]

    async def result(self) -> Answer:
        """The answer once its chunks ended (its checks run here, by the same deadline)."""
        return await self._in_thread(self.stream.result, "checked the answer")  # type: ignore[return-value]

    async def close(self) -> None:
        """Wait for a read in progress (it ends at the deadline: the answer checks it before each chunk; at
        most ``close_wait_s``, the LLM client's own timeout for more text), close the LLM's stream, then give
        the turn back. Safe to call again."""
        if self._closed:
            return
        self._closed = True
        self._left.set()
        loop = asyncio.get_running_loop()
        reading = self._reading
        if reading is not None and not reading.done():
            try:
                await asyncio.wait({reading}, timeout=self._close_wait_s)
            except asyncio.CancelledError:  # the close itself cancelled: the turn still comes back, after the read
                self._late_close = loop.create_task(self._close_and_release(reading))
                raise
            if not reading.done():
                # The read still runs (a client stuck past its own timeout): its generator cannot be closed from
                # here, and the server is not free. Both happen when the read ends, not before.
                logger.warning("an answer's read outlasted %.0f s after its client left; its turn waits for it",
                               self._close_wait_s)  # fmt: skip
                self._late_close = loop.create_task(self._close_and_release(reading))
                return
        await self._close_and_release(None)

    @property
    def released(self) -> bool:
        """Whether the turn at the LLM was given back (tests and the server's counts ask)."""
        return self._released

    async def _close_and_release(self, reading: asyncio.Future[object] | None) -> None:
        """Once ``reading`` ended: close the streams (in a thread: the HTTP stream's close may block), then give
        the turn back here, in the event loop, where the queue of turns lives."""
        try:
            if reading is not None:
                await asyncio.wait({reading})
            await asyncio.get_running_loop().run_in_executor(None, self._close_streams)
        finally:
            self._released = True
            self._release()

    async def _in_thread(self, work: Callable[[], object], doing: str) -> object:
        loop = asyncio.get_running_loop()
        self._reading = loop.run_in_executor(None, run_within, self.deadline, work, self._left)
        try:
            return await asyncio.wait_for(asyncio.shield(self._reading), max(0.0, self.deadline - loop.time()))
        except TimeoutError:  # the wait ran out, or the answer stopped at the deadline by itself
            raise self._late(doing) from None

    def _close_streams(self) -> None:
        """Close the chunks and the LLM's stream under them; called only once no read runs (a running generator
        cannot be closed)."""
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()
        self.stream.close()  # the LLM's own stream, under the chunks
