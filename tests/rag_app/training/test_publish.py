"""Publishing a registered fine-tune into the package directory, with its evaluation in the card."""

from __future__ import annotations

import json
from pathlib import Path

from rag_app.training.publish import publish
from retriever.models.embedding_registry import EmbeddingRegistry, RegisteredEmbedder, resolve_embedder

REPORT = {
    "provenance": {"date": "2026-11-22", "git_commit": "abc"},
    "sets": [
        {
            "query_set": {"name": "stacks-names"},
            "primary": "MRR@10",
            "group_sizes": {"unseen papers": 40},
            "retrievers": [
                {"name": "dense [all-MiniLM-L6-v2]", "aggregate": {"MRR@10": 0.25},
                 "groups": {"unseen papers": {"MRR@10": 0.2}}},
                {"name": "dense [math@v1]", "aggregate": {"MRR@10": 0.5}, "groups": {"unseen papers": {"MRR@10": 0.4}}},
            ],
        }
    ],
}  # fmt: skip


def test_publish_copies_the_version_and_records_metrics(tmp_path: Path) -> None:
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "adapter_config.json").write_text("{}")
    card = {"base_model": "packaged:all-MiniLM-L6-v2", "kind": "lora", "data": {"index": "/home/me/index"}}
    model = EmbeddingRegistry(tmp_path / "registry").create_version("math", card, weights)
    (tmp_path / "report.json").write_text(json.dumps(REPORT))
    target = publish(model.directory, tmp_path / "report.json", tmp_path / "package")
    assert target == tmp_path / "package" / "math" / "v1"
    shipped = RegisteredEmbedder.read(target)
    metrics = shipped.metrics["stacks-names"]
    assert metrics["retrievers"]["dense [math@v1]"] == {"all": 0.5, "unseen papers": 0.4}
    assert "index" not in shipped.card["data"]  # no paths of the machine that trained it
    assert (target / "adapter" / "adapter_config.json").is_file()
    assert EmbeddingRegistry(tmp_path / "package").get("math").version == 1
    assert resolve_embedder(str(target)).identity == "math@v1"
