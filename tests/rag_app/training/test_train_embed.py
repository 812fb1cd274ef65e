"""`train embed` end to end on the demo index: split, pairs, hard negatives, LoRA training with
checkpoints and resume, the registry, the index refusing another embedder, `reindex`, and `eval`
comparing base and fine-tuned side by side with the training split's groups."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag_app.cli import app
from rag_app.datasets.paper_split import PaperSplit
from rag_app.datasets.query_set import EvalQuery, Protocol
from rag_app.evaluation import QuerySet
from rag_app.pipeline import demo_corpus_path

# Trains, starts a server or browser, or reads real corpora: out of the fast tier.
pytestmark = pytest.mark.slow

runner = CliRunner()

# Small and fast: a few steps of 8 examples at 64 tokens; a checkpoint after every step.
TINY_TRAINING = {
    "RAG_APP_TRAINING__EMBED__BATCH_SIZE": "8",
    "RAG_APP_TRAINING__EMBED__MINI_BATCH_SIZE": "4",
    "RAG_APP_TRAINING__EMBED__MAX_SEQ_LENGTH": "64",
    "RAG_APP_TRAINING__EMBED__CHECKPOINT_STEPS": "1",
    "RAG_APP_TRAINING__EMBED__UNSEEN_FRACTION": "0.2",
    "RAG_APP_TRAINING__EMBED__NAME": "demo-math",
}


@pytest.fixture(scope="module")
def trained(demo_index_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Two steps, then a rerun to three steps that resumes from the last checkpoint."""
    base = tmp_path_factory.mktemp("train")
    index = base / "index"
    shutil.copytree(demo_index_dir, index)
    env = {**TINY_TRAINING, "RAG_APP_DATA_DIR": str(base / "data")}
    args = ["train", "embed", "--index", str(index), "--json"]
    first = runner.invoke(app, [*args, "--max-steps", "2"], env=env)
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, [*args, "--max-steps", "3"], env=env)
    assert second.exit_code == 0, second.output
    return {
        "base": base,
        "index": index,
        "env": env,
        "first": json.loads(first.stdout.strip().splitlines()[-1]),
        "second": json.loads(second.stdout.strip().splitlines()[-1]),
    }


def test_training_registers_versions_and_resumes_from_its_checkpoint(trained: dict) -> None:
    first, second = trained["first"], trained["second"]
    assert first["model"] == "registry:demo-math@v1" and second["model"] == "registry:demo-math@v2"
    assert first["kind"] == "lora" and first["base_model"] == "packaged:all-MiniLM-L6-v2"
    assert first["steps"] == 2 and first["resumed_from"] is None
    assert second["steps"] == 3 and second["resumed_from"] == "checkpoint-2"
    assert {"name", "section", "label"} <= set(first["pairs"])
    assert first["split"]["unseen_papers"] >= 1 and first["split"]["held_out_statements_of_seen_papers"] >= 1

    model_dir = Path(second["directory"])
    card = json.loads((model_dir / "model.json").read_text())
    assert card["base_model"] == "packaged:all-MiniLM-L6-v2" and card["kind"] == "lora"
    assert card["data"]["pairs_with_hard_negative"] > 0 and card["training"]["batch_size"] == 8
    assert (model_dir / "adapter" / "adapter_model.safetensors").stat().st_size < 5_000_000
    split = PaperSplit.load(model_dir / "split.json")
    assert split.unseen_papers and split.held_out

    listed = runner.invoke(app, ["train", "list", "--json"], env=trained["env"])
    models = {row["model"] for row in json.loads(listed.stdout)}
    assert {"registry:demo-math@v1", "registry:demo-math@v2"} <= models


def test_search_refuses_the_other_embedder_until_reindexed(trained: dict) -> None:
    env = {**trained["env"], "RAG_APP_EMBEDDING__MODEL": "registry:demo-math@v2"}
    index = str(trained["index"])
    refused = runner.invoke(app, ["search", "Cauchy integral formula", "--index", index, "--json"], env=env)
    assert refused.exit_code != 0
    assert "rag-app reindex" in str(refused.exception) or "rag-app reindex" in refused.output

    done = runner.invoke(app, ["reindex", "--index", index, "--json"], env=env)
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["previous"] == "packaged:all-MiniLM-L6-v2+unicode-math"
    assert result["embedder"] == "registry:demo-math@v2+unicode-math"
    assert result["embedded"] == result["statements"] > 0

    found = runner.invoke(app, ["search", "Cauchy integral formula", "--index", index, "--json"], env=env)
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)[0]["paper_id"] == "complex-analysis"
    status = runner.invoke(app, ["status", "--index", index], env=env)
    assert "registry:demo-math@v2" in status.stdout


def test_eval_compares_embedders_side_by_side_by_split_group(trained: dict, tmp_path: Path) -> None:
    split_path = Path(trained["second"]["directory"]) / "split.json"
    split = PaperSplit.load(split_path)
    unseen = sorted(split.unseen_papers)[0]
    queries = (
        EvalQuery("q1", "Cauchy integral formula", {"complex-analysis#thm:cauchy-formula": 1},
                  paper_ids=("complex-analysis",)),
        EvalQuery("q2", "every bounded monotone sequence converges", {f"{unseen}#x": 1}, paper_ids=(unseen,)),
    )  # fmt: skip
    query_set = QuerySet("demo-questions", 1, Protocol.KNOWN_ITEM, queries, corpus=(".",),
                         corpus_root=str(demo_corpus_path()))  # fmt: skip
    query_set.save(tmp_path / "demo.v1.jsonl")
    embedders = ["--embedder", "packaged:all-MiniLM-L6-v2", "--embedder", "registry:demo-math@v1"]
    args = ["eval", str(tmp_path / "demo.v1.jsonl"), "-r", "dense", *embedders, "--split", str(split_path),
            "--out", str(tmp_path / "o"), "--json"]  # fmt: skip
    result = runner.invoke(app, args, env=trained["env"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    (evaluation,) = report["sets"]
    names = [r["name"] for r in evaluation["retrievers"]]
    assert names == ["dense [all-MiniLM-L6-v2+unicode-math]", "dense [demo-math@v1+unicode-math]"]
    assert set(evaluation["group_sizes"]) <= {"statements trained on", "papers seen in training", "unseen papers"}
    assert evaluation["group_sizes"].get("unseen papers") == 1
    assert set(report["provenance"]["indexes"]) == {
        "packaged:all-MiniLM-L6-v2+unicode-math",
        "registry:demo-math@v1+unicode-math",
    }
    markdown = (tmp_path / "o" / "report.md").read_text()
    assert "dense [demo-math@v1+unicode-math]" in markdown and "unseen papers" in markdown


def test_a_questions_file_is_trained_on_as_it_is_with_no_llm(demo_index_dir: Path, tmp_path: Path) -> None:
    """`--questions-file`: the generation job's file is read, never extended (no LLM is reachable here)."""
    from rag_app.training.index_store import open_index_store
    from rag_app.training.question_file import GeneratedQuestion, QuestionFile

    index = tmp_path / "index"
    shutil.copytree(demo_index_dir, index)
    store, _ = open_index_store(index)
    records = list(store.iter_records())
    questions = QuestionFile(tmp_path / "generated-questions.jsonl")
    questions.start({"model": "test", "prompt": "question_generation@v2"})
    questions.append(
        [GeneratedQuestion(r.id, r.docno, r.paper_id, f"what does {r.display_name} say", "test", "v2") for r in records]
    )
    before = questions.path.read_bytes()
    env = {
        **TINY_TRAINING,
        "RAG_APP_DATA_DIR": str(tmp_path / "data"),
        "RAG_APP_LLM__BASE_URL": "http://127.0.0.1:9/v1",
    }
    args = ["train", "embed", "--index", str(index), "--json", "--max-steps", "1"]
    result = runner.invoke(app, [*args, "--questions-file", str(questions.path), "--no-hard-negatives"], env=env)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    # only the training split's statements are paired: the held-out ones stay unseen
    assert 0 < summary["pairs"]["question"] < len(records)
    assert summary["questions"] == {
        "file": str(questions.path),
        "generated": 0,
        "cached": summary["pairs"]["question"],
        "failed": 0,
    }
    assert questions.path.read_bytes() == before

    # the scarce questions whole beside a capped share of one plentiful kind; the rest left out
    capped = runner.invoke(
        app,
        [*args, "--questions-file", str(questions.path), "--no-hard-negatives", "--max-pairs-per-kind", "2"],
        env={**env, "RAG_APP_TRAINING__EMBED__PAIR_KINDS": '["question", "section"]'},
    )
    assert capped.exit_code == 0, capped.output
    assert json.loads(capped.stdout.strip().splitlines()[-1])["pairs"] == {"section": 2, "question": 2}

    missing = runner.invoke(app, [*args, "--questions-file", str(tmp_path / "none.jsonl")], env=env)
    said = "".join(missing.output.replace("│", "").split())  # unwrapped from the error box
    assert missing.exit_code == 2 and "".join(f"{tmp_path / 'none.jsonl'}: no such file".split()) in said
