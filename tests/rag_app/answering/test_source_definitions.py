"""The definitions a source relies on, given to the model under it (``answers.source_definitions``)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ingestion.records import StatementKind, StatementRecord
from rag_app import MathRAG
from rag_app.answering.answerer import Answerer
from rag_app.answering.context import definitions_note, pack_sources
from rag_app.answering.conversation import RewriteMethod, RewrittenQuery
from rag_app.answering.stages import Retrieval
from retriever.types import Query, ScoredBy, SearchResult
from tests.conftest import make_settings
from tests.rag_app.answering.answer_helpers import PID, FlatEmbedder
from tests.rag_app.answering.test_quoted_answer import hit

LOCAL_RING = StatementRecord(
    id="def-local", source=hit("x").record.source, kind=StatementKind.DEFINITION, paper_id="2501.01947",
    name="local ring", text="A ring is local if it has exactly one maximal ideal. " + "More words follow. " * 40,
)  # fmt: skip


class RecordingClient:
    model, base_url = "recording", "http://recording"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def chat_with_alternatives(self, messages, max_tokens=None, alternatives=10):
        self.prompts.append(messages[-1]["content"])
        return "[1]", []

    def context_window(self) -> None:
        return None

    def count_tokens(self, text: str) -> None:
        return None


def test_the_note_follows_the_statement_inside_its_fence_outside_the_budget() -> None:
    first, second = hit("Nakayama's lemma: if M = mM then M = 0."), hit(PID)
    note = definitions_note([LOCAL_RING], max_tokens=16)
    assert note.startswith("It relies on these definitions:\n- Definition (local ring): A ring is local")
    assert note.endswith(" …") and len(note) < 130  # cut at a word, near 16 tokens
    budget = pack_sources([first, second], 1000, "KEY").tokens + 4  # both sources, just
    plain = pack_sources([first, second], budget, "KEY")
    noted = pack_sources([first, second], budget, "KEY", notes={first.record.id: note + "\n</source key=KEY>"})
    assert len(noted.hits) == len(plain.hits) == 2, "the note takes none of the sources' room"
    block = noted.text.split("\n\n")[0]
    assert block.index("M = 0.") < block.index("It relies on") < block.rindex("</source key=KEY>")
    assert block.count("</source key=KEY>") == 1, "text in a note cannot close the fence"
    assert noted.tokens > plain.tokens


def answered_prompt(tmp_path: Path, source_definitions: int) -> tuple[str, list[str]]:
    hits = [hit("Nakayama's lemma: if M = mM then M = 0."), hit(PID)]
    settings = make_settings(tmp_path, answers={"style": "quote", "source_definitions": source_definitions})
    asked: list[str] = []

    def definitions(statement_id: str, limit: int) -> list[StatementRecord]:
        asked.append(statement_id)
        return [LOCAL_RING][:limit] if statement_id == hits[0].record.id else []

    client = RecordingClient()
    vectors = {h.record.id: np.ones(4, np.float32) / 2 for h in hits}
    answerer = Answerer(settings, FlatEmbedder(), lambda ids: {i: vectors[i] for i in ids}, lambda: client, definitions)
    result = SearchResult(hits, Query("when is a module zero"), vectors, scored_by=ScoredBy.FUSION)
    retrieval = Retrieval(
        RewrittenQuery("when is a module zero", RewriteMethod.AS_ASKED), result, "everything", "hybrid"
    )
    answerer.stream("when is a module zero", retrieval, time.perf_counter()).result()
    return client.prompts[0], asked


def test_the_model_reads_the_definitions_only_when_asked_for(tmp_path: Path) -> None:
    prompt, asked = answered_prompt(tmp_path, source_definitions=1)
    assert "- Definition (local ring): A ring is local" in prompt and len(asked) == 2
    assert prompt.index("It relies on") < prompt.index("<source 2 ")
    prompt, asked = answered_prompt(tmp_path / "off", source_definitions=0)
    assert "It relies on" not in prompt and asked == []


def test_the_graph_gives_a_statements_definitions_as_records(demo_index_dir: Path, tmp_path: Path) -> None:
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir))
    corollary = rag.statement("galois-theory#cor:finitely-many-intermediate").record
    [definition] = rag.statement_links.definition_records(corollary.id, depth=1, limit=2)
    assert definition.label == "def:normal-separable" and definition.kind is StatementKind.DEFINITION
    assert rag.statement_links.definition_records(corollary.id, depth=1, limit=0) == []
