"""An answer streamed to an async front end, closed while a read of the model still runs (issue 93)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

from rag_app.answering.answer import AnswerStream
from rag_app.api.streamed_answer import StreamedAnswer


def test_a_read_that_outlasts_the_close_keeps_the_turn_until_it_ends() -> None:
    """The client left while the model's read hung past ``close_wait_s``: the turn at the LLM was given back at
    once, with the read still running (a busy server counted as free), and closing its generator failed with
    "generator already executing", suppressed. The turn now comes back when the read ends, the streams closed."""
    model_writes = threading.Event()
    closed: list[str] = []

    def chunks() -> Iterator[str]:
        try:
            yield "The first words"
            model_writes.wait(10)  # the model's next chunk, late: no deadline reaches into this read
            yield " and the rest"
        finally:
            closed.append("chunks")

    released: list[float] = []

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        stream = AnswerStream([], chunks(), lambda text, generation, s: None)  # type: ignore[arg-type,return-value]
        answer = StreamedAnswer(
            stream, lambda: released.append(loop.time()), loop.time() + 60, TimeoutError, close_wait_s=0.2
        )
        assert await answer.__anext__() == "The first words"
        reading = asyncio.ensure_future(answer.__anext__())
        await asyncio.sleep(0.1)  # the second read is running in its thread
        await answer.close()
        assert released == [] and not answer.released, "the turn came back while the read still ran"
        model_writes.set()
        assert await reading == " and the rest"
        await asyncio.wait_for(answer._late_close, 5)  # type: ignore[arg-type]
        assert len(released) == 1 and answer.released and closed == ["chunks"]
        await answer.close()  # safe to call again: nothing is given back twice
        assert len(released) == 1

    asyncio.run(scenario())
