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
from collections.abc import Callable
from pathlib import Path

from prompts import PromptTemplate
from rag_app.serving.llm_client import ChatClient
from rag_app.serving.llm_connection import LLM_FAILURES

_MAX_CHARS = 600  # a rewrite longer than this has wandered off the one statement it was asked for

logger = logging.getLogger(__name__)


class StatementRewriter:
    """``rewrite(query)``: the statement the model thinks the query looks for, or "" when it has none."""

    def __init__(
        self,
        prompt: PromptTemplate,
        client: Callable[[], ChatClient],
        cache: Path | None = None,
        max_tokens: int = 48,  # a statement's opening is what search needs; each token costs ~40 ms on a CPU
    ) -> None:
        self.prompt = prompt
        self.client = client
        self.cache_path = cache
        self.max_tokens = max_tokens
        self._cache: dict[str, str] | None = None
        self._lock = threading.Lock()

    def rewrite(self, query: str) -> str:
        try:  # starting the client may fail too (no packaged model, a server that will not start)
            client = self.client()
            key = self._key(client.model, query)
            cached = self._cached().get(key)
            if cached is not None:
                return cached
            reply = client.chat(self.prompt.messages(query=query), max_tokens=self.max_tokens, temperature=0.0)
        except LLM_FAILURES as error:  # the LLM down or broken: search the query alone, and say why in the log
            logger.warning("no statement rewrite for %r: %s", query[:80], error)
            return ""
        rewrite = usable_statement(reply, query)
        self._store(key, query, rewrite)
        return rewrite

    def _key(self, model: str, query: str) -> str:
        return hashlib.sha256(f"{model}\n{self.prompt.identity}\n{query}".encode()).hexdigest()[:24]

    def _cached(self) -> dict[str, str]:
        with self._lock:
            if self._cache is None:
                self._cache = {}
                if self.cache_path is not None and self.cache_path.exists():
                    for line in self.cache_path.read_text(encoding="utf-8").splitlines():
                        try:
                            entry = json.loads(line)
                            self._cache[entry["key"]] = entry["rewrite"]
                        except (json.JSONDecodeError, KeyError, TypeError):
                            continue  # a line cut by a crash: that rewrite is made again
            return self._cache

    def _store(self, key: str, query: str, rewrite: str) -> None:
        with self._lock:
            assert self._cache is not None
            self._cache[key] = rewrite
            if self.cache_path is not None:
                self.cache_path.parent.mkdir(parents=True, exist_ok=True)
                with self.cache_path.open("a", encoding="utf-8") as handle:
                    handle.write(
                        json.dumps({"key": key, "query": query, "rewrite": rewrite}, ensure_ascii=False) + "\n"
                    )


def usable_statement(reply: str, query: str) -> str:
    """The model's statement, cleaned of quotes and labels; "" when it is empty, too long or the query again."""
    text = " ".join(reply.strip().strip('"').split())
    for prefix in ("Statement:", "Theorem:", "Lemma:", "Definition:"):
        if text.startswith(prefix):
            text = text[len(prefix) :].strip()
    if not text or len(text) > _MAX_CHARS or text.lower() == query.strip().lower():
        return ""
    return text
