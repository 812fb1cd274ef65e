"""`train rerank` on the demo index: hard negatives from our own retriever, the split, resuming."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_app.settings import RerankTrainingSettings
from rag_app.training.index_store import open_index_store
from rag_app.training.train_rerank import EXAMPLES_FILE, TrainRerankJob, publish_reranker
from retriever.models.cross_encoder_reranker import CARD, CrossEncoderReranker
from tests.conftest import make_settings

# Trains, starts a server or browser, or reads real corpora: out of the fast tier.
pytestmark = pytest.mark.slow


def _job(tmp_path: Path, index_dir: Path, max_steps: int) -> TrainRerankJob:
    training = RerankTrainingSettings(
        max_queries=8, negatives=2, negative_depth=8, batch_size=2, max_steps=max_steps, checkpoint_steps=2,
        max_length=64,
    )  # fmt: skip
    settings = make_settings(tmp_path, index_dir=index_dir)
    settings.training.rerank = training
    return TrainRerankJob(settings, index_dir)


def test_train_rerank_mines_from_the_index_and_resumes(demo_index_dir: Path, tmp_path: Path) -> None:
    first = _job(tmp_path, demo_index_dir, max_steps=2).run(show_progress=False, log=lambda _m: None)
    assert first.run.steps == 2 and first.run.resumed_from is None and not first.reused_examples
    assert sum(first.pairs.values()) == 8 and "section" not in first.pairs
    examples = [json.loads(line) for line in (first.directory.parent.parent.parent / "training" / "rerank" /
                "math-reranker" / EXAMPLES_FILE).read_text().splitlines()]  # fmt: skip
    assert all(len(e["texts"]) == 3 and e["texts"][0] not in e["texts"][1:] for e in examples)
    card = json.loads((first.directory / CARD).read_text())
    assert card["kind"] == "cross-encoder-lora" and card["data"]["queries"] == 8
    split = json.loads((first.directory / "split.json").read_text())
    held_out_papers = set(split["unseen_papers"])
    assert held_out_papers  # the demo corpus has papers held out whole
    store, _ = open_index_store(demo_index_dir)
    paper_of = {record.search_text(): record.paper_id for record in store.iter_records()}
    assert not {paper_of[text] for e in examples for text in e["texts"]} & held_out_papers

    again = _job(tmp_path, demo_index_dir, max_steps=4).run(show_progress=False, log=lambda _m: None)
    assert again.reused_examples and again.run.resumed_from == "checkpoint-2" and again.run.steps == 4

    reranker = CrossEncoderReranker(str(again.directory), max_length=64)
    assert reranker.score("a continuous function on a closed interval", ["Theorem. Extreme values."]).shape == (1,)
    published = publish_reranker(again.directory, {"note": "test"}, target=tmp_path / "packaged")
    assert json.loads((published / CARD).read_text())["metrics"] == {"note": "test"}


def test_mined_work_dir_trains_elsewhere_and_the_job_resumes_from_it(demo_index_dir: Path, tmp_path: Path) -> None:
    """`--mine-only` writes what a GPU box needs; training there needs only the work directory and
    the base model, and the job then finishes from the copied-back checkpoint without training again."""
    from rag_app.training.reranker_trainer import TRAINING_SETTINGS_FILE
    from rag_app.training.reranker_trainer import main as train_work_dir
    from retriever.models.embedding_registry import resolve_embedder

    job = _job(tmp_path, demo_index_dir, max_steps=2)
    assert job.run(show_progress=False, log=lambda _m: None, mine_only=True) is None
    assert (job.work_dir / EXAMPLES_FILE).is_file() and (job.work_dir / TRAINING_SETTINGS_FILE).is_file()
    assert not (job.work_dir / "checkpoints").exists()

    elsewhere = tmp_path / "gpu-box" / "work"
    elsewhere.mkdir(parents=True)
    for name in (EXAMPLES_FILE, TRAINING_SETTINGS_FILE):
        (elsewhere / name).write_bytes((job.work_dir / name).read_bytes())
    base = resolve_embedder("packaged:all-MiniLM-L6-v2", None).model_path
    train_work_dir([str(elsewhere), "--base", str(base), "--device", "cpu"])
    assert (elsewhere / "checkpoints" / "checkpoint-2").is_dir()

    import shutil

    shutil.copytree(elsewhere / "checkpoints", job.work_dir / "checkpoints")
    report = job.run(show_progress=False, log=lambda _m: None)
    assert report is not None and report.reused_examples and report.run.resumed_from == "checkpoint-2"
    assert report.run.steps == 2
    assert CrossEncoderReranker(str(report.directory), max_length=64).score("x", ["Theorem. y."]).shape == (1,)
