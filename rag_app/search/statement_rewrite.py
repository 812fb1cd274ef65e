"""The statement a short query is looking for, written by the packaged LLM: a second query to search.

Users type shorthand (``pi_1(S^1) = Z``, ``PID => UFD``, ``Hall marriage thm``); the statements we index
are written out ("Let ... Then ..."). The closest peer (TheoremSearch) found several query rewrites
fused by rank worth much on such questions. Here the model writes one statement per query
(``prompts/statement_rewrite``), searched beside the query itself and fused by rank
(:class:`retriever.search.rewrite_fusing_searcher.RewriteFusingSearcher`). Rewrites are kept in a small JSON
lines cache under the data directory, keyed by model, prompt and query: a repeated question (and an
evaluation run again) costs no generation.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from prompts import PromptTemplate
from rag_app.serving.llm_client import ChatClient
from rag_app.serving.llm_connection import LLM_FAILURES
from retriever.storage.atomic_files import write_text_atomically

_MAX_CHARS = 600  # a rewrite longer than this has wandered off the one statement it was asked for

logger = logging.getLogger(__name__)


class StatementRewriter:
    """``rewrite(query)``: the statement the model thinks the query looks for, or "" when it has none.

    The rewrites kept are bounded, so that distinct queries do not pile up for good in memory and in the
    file: the ``max_entries`` used last stay in memory, and the file is written again with just
    those once it holds twice as many lines. Two callers with the same query at once make one model call:
    the second waits for the first's rewrite (at most ``wait_s``).
    """

    def __init__(
        self,
        prompt: PromptTemplate,
        client: Callable[[], ChatClient],
        cache: Path | None = None,
        max_tokens: int = 48,  # a statement's opening is what search needs; each token costs ~40 ms on a CPU
        max_entries: int = 10_000,  # some 3 MB of rewrites: far more distinct questions than a day brings
        wait_s: float = 60.0,
    ) -> None:
        self.prompt = prompt
        self.client = client
        self.cache_path = cache
        self.max_tokens = max_tokens
        self.max_entries = max_entries
        self.wait_s = wait_s
        self._cache: OrderedDict[str, tuple[str, str]] | None = None  # key -> (query, rewrite), last used last
        self._lines = 0  # lines in the cache file
        self._writing: dict[str, threading.Event] = {}  # keys whose rewrite a caller is asking the model for
        self._lock = threading.Lock()

    def rewrite(self, query: str) -> str:
        try:  # starting the client may fail too (no packaged model, a server that will not start)
            client = self.client()
            key = self._key(client.model, query)
            cached, writer = self._cached_or_turn(key)
            if cached is not None:
                return cached
            if writer is None:  # another caller asks the model for this very query: wait for its rewrite
                return self._waited_for(key)
            try:
                reply = client.chat(self.prompt.messages(query=query), max_tokens=self.max_tokens, temperature=0.0)
                rewrite = usable_statement(reply, query)
                self._store(key, query, rewrite)
            finally:
                with self._lock:
                    self._writing.pop(key, None)
                writer.set()
        except LLM_FAILURES as error:  # the LLM down or broken: search the query alone, and say why in the log
            logger.warning("no statement rewrite for %r: %s", query[:80], error)
            return ""
        return rewrite

    def cached(self) -> int:
        """How many rewrites are kept in memory."""
        with self._lock:
            return len(self._entries())

    def _cached_or_turn(self, key: str) -> tuple[str | None, threading.Event | None]:
        """The kept rewrite of ``key``; else this caller's turn to ask the model (an event to set when done),
        or (None, None) when another caller has that turn."""
        with self._lock:
            entries = self._entries()
            if key in entries:
                entries.move_to_end(key)
                return entries[key][1], None
            if key in self._writing:
                return None, None
            self._writing[key] = threading.Event()
            return None, self._writing[key]

    def _waited_for(self, key: str) -> str:
        with self._lock:
            writing = self._writing.get(key)
        if writing is not None:
            writing.wait(self.wait_s)
        with self._lock:
            entry = self._entries().get(key)
        return entry[1] if entry is not None else ""  # the first caller's model call failed: the query alone

    def _key(self, model: str, query: str) -> str:
        return hashlib.sha256(f"{model}\n{self.prompt.identity}\n{query}".encode()).hexdigest()[:24]

    def _entries(self) -> OrderedDict[str, tuple[str, str]]:
        """The kept rewrites, read from the file the first time (under the lock)."""
        if self._cache is None:
            self._cache = OrderedDict()
            if self.cache_path is not None and self.cache_path.exists():
                for line in self.cache_path.read_text(encoding="utf-8").splitlines():
                    self._lines += 1
                    try:
                        entry = json.loads(line)
                        self._cache[entry["key"]] = (str(entry.get("query", "")), entry["rewrite"])
                        self._cache.move_to_end(entry["key"])
                    except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
                        continue  # a line cut by a crash: that rewrite is made again
                while len(self._cache) > self.max_entries:
                    self._cache.popitem(last=False)
        return self._cache

    def _store(self, key: str, query: str, rewrite: str) -> None:
        with self._lock:
            entries = self._entries()
            entries[key] = (query, rewrite)
            entries.move_to_end(key)
            while len(entries) > self.max_entries:
                entries.popitem(last=False)  # the one used longest ago
            if self.cache_path is None:
                return
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            if self._lines + 1 > 2 * self.max_entries:  # the file holds old rewrites twice over: write it anew
                lines = [_line(k, q, r) for k, (q, r) in entries.items()]
                write_text_atomically(self.cache_path, "".join(lines))
                self._lines = len(lines)
                return
            with self.cache_path.open("a", encoding="utf-8") as handle:
                handle.write(_line(key, query, rewrite))
            self._lines += 1


def _line(key: str, query: str, rewrite: str) -> str:
    return json.dumps({"key": key, "query": query, "rewrite": rewrite}, ensure_ascii=False) + "\n"


def usable_statement(reply: str, query: str) -> str:
    """The model's statement, cleaned of quotes and labels; "" when it is empty, too long or the query again."""
    text = " ".join(reply.strip().strip('"').split())
    for prefix in ("Statement:", "Theorem:", "Lemma:", "Definition:"):
        if text.startswith(prefix):
            text = text[len(prefix) :].strip()
    if not text or len(text) > _MAX_CHARS or text.lower() == query.strip().lower():
        return ""
    return text
