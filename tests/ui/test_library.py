from __future__ import annotations

from pathlib import Path

from ingestion.records import StatementKind
from rag_app import MathRAG
from tests.conftest import make_settings
from ui.library import library_stats


def test_library_stats_count_the_demo_index(demo_index_dir: Path, tmp_path: Path) -> None:
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir))
    stats = library_stats(rag.index)
    assert stats.statements == rag.index.count() == sum(stats.statements_by_kind.values())
    assert dict(stats.statements_by_source) == {"local": stats.statements}
    assert stats.papers_by_source["local"] == len(
        list((Path(__file__).parents[2] / "rag_app" / "demo_corpus").iterdir())
    )
    # the kinds in the canonical order, every kind the demo corpus holds (issue 86: `a or b` asserted only b)
    order = [kind.value for kind in StatementKind]
    assert stats.kinds() == sorted(stats.statements_by_kind, key=order.index)
    assert stats.kinds()[:2] == ["theorem", "lemma"]
    assert stats.first_date is None and not stats.categories  # the demo corpus has no arXiv metadata
    assert stats.embedder == rag.index.embedder.identity and stats.last_ingest
