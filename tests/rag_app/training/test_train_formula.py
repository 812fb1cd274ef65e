"""`train formula`, `build-fusion` and the formula modes end to end on a copy of the demo index:
the encoder's held-out check, the fusion vectors (incremental, refused when other models built
them), `search --mode fusion|fusion-maxsim|hybrid-formula` and `search --formula`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from rag_app.cli import app
from rag_app.pipeline import MathRAG
from retriever.models.formula_encoder import FormulaEncoder, FormulaEncoderConfig, FormulaVocabulary
from retriever.models.marf_encoder import FormulaModels, MarfEncoder
from retriever.models.marf_fusion import FusionConfig, MaRFFusion
from retriever.store.marf_index import MarfIndexError
from tests.conftest import make_settings

# Trains, starts a server or browser, or reads real corpora: out of the fast tier.
pytestmark = pytest.mark.slow

runner = CliRunner()

TINY_FORMULA = {
    "RAG_APP_FORMULA__ENCODER_PAIRS": "200",
    "RAG_APP_FORMULA__HELDOUT_PAIRS": "60",
    "RAG_APP_FORMULA__COOCCURRENCE_PAIRS": "50",
    "RAG_APP_FORMULA__ENCODER_STEPS": "4",
    "RAG_APP_FORMULA__ENCODER_BATCH_SIZE": "16",
    "RAG_APP_FORMULA__DIM": "32",
    "RAG_APP_FORMULA__FFN_DIM": "64",
    "RAG_APP_FORMULA__FUSION_STEPS": "3",
    "RAG_APP_FORMULA__FUSION_BATCH_SIZE": "8",
    "RAG_APP_FORMULA__FUSION_FFN_DIM": "64",
    "RAG_APP_FORMULA__FUSION_TEXT_PAIRS": "30",
    "RAG_APP_FORMULA__FUSION_FORMULA_PAIRS": "30",
    "RAG_APP_FORMULA__WORKERS": "1",
    "RAG_APP_TRAINING__EMBED__UNSEEN_FRACTION": "0.2",
    "RAG_APP_TRAINING__EMBED__MAX_SEQ_LENGTH": "64",
}


@pytest.fixture(scope="module")
def formula_setup(demo_index_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("formula")
    index = base / "index"
    shutil.copytree(demo_index_dir, index)
    models = base / "models"
    env = {**TINY_FORMULA, "RAG_APP_DATA_DIR": str(base / "data")}
    trained = runner.invoke(app, ["train", "formula", "--index", str(index), "--out", str(models), "--json"], env=env)
    assert trained.exit_code == 0, trained.output
    env["RAG_APP_FORMULA__MODELS"] = str(models)
    built = runner.invoke(app, ["build-fusion", "--index", str(index), "--json"], env=env)
    assert built.exit_code == 0, built.output
    return {
        "index": index,
        "models": models,
        "env": env,
        "trained": json.loads(trained.stdout.strip().splitlines()[-1]),
        "built": json.loads(built.stdout.strip().splitlines()[-1]),
    }


def test_train_formula_writes_models_and_the_equivalence_check(formula_setup: dict) -> None:
    trained, models = formula_setup["trained"], formula_setup["models"]
    assert {"bm25 (formula terms)", "encoder (mean)", "encoder (maxsim)"} <= set(trained["equivalence_check"])
    assert (models / "encoder" / "weights.pt").exists() and (models / "encoder-maxsim" / "weights.pt").exists()
    assert (models / "split.json").exists()
    card = json.loads((models / "card.json").read_text())
    assert card["identity"] == trained["identity"] and card["fusion"]["steps"] == 3
    assert card["fusion"]["pairs"]["formula"] > 0


def test_build_fusion_embeds_every_statement_once(formula_setup: dict) -> None:
    built, env, index = formula_setup["built"], formula_setup["env"], formula_setup["index"]
    assert built["added"] > 50 and built["removed"] == 0 and built["statements"] == built["added"]
    assert built["bytes"]["maxsim_tokens"] > 0
    again = runner.invoke(app, ["build-fusion", "--index", str(index), "--json"], env=env)
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout.strip().splitlines()[-1])["added"] == 0


@pytest.mark.parametrize("mode", ["fusion", "fusion-maxsim", "hybrid-formula", "formula"])
def test_search_modes_find_the_statement_of_a_formula(formula_setup: dict, mode: str) -> None:
    env, index = formula_setup["env"], formula_setup["index"]
    result = runner.invoke(
        app, ["search", r"$C_n = \frac{1}{n+1}\binom{2n}{n}$", "--mode", mode, "--index", str(index), "--json"], env=env
    )
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert any(r"\binom{2n}{n}" in hit["text"] for hit in hits[:3]), mode


def test_search_formula_finds_an_equivalent_spelling(formula_setup: dict) -> None:
    env, index = formula_setup["env"], formula_setup["index"]
    # the demo corpus writes \frac{1}{n+1}\binom{2n}{n}; this spelling normalizes to the same tokens
    result = runner.invoke(
        app, ["search", "--formula", r"\tfrac1{n+1}\dbinom{2n}n", "--index", str(index), "--json"], env=env
    )
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert r"\binom{2n}{n}" in hits[0]["text"]
    assert {"formula", "formula-encoder"} & set(hits[0]["channel_ranks"])


def test_fusion_vectors_built_by_other_models_are_refused(formula_setup: dict, tmp_path: Path) -> None:
    index = tmp_path / "index"
    shutil.copytree(formula_setup["index"], index)
    other = tmp_path / "other-models"
    shutil.copytree(formula_setup["models"], other)
    card = json.loads((other / "card.json").read_text())
    (other / "card.json").write_text(json.dumps({**card, "identity": "another-model"}))
    env = {**formula_setup["env"], "RAG_APP_FORMULA__MODELS": str(other)}
    refused = runner.invoke(app, ["search", "x^2", "--mode", "fusion", "--index", str(index)], env=env)
    assert refused.exit_code != 0  # `rag-app` itself turns the error into a message and exit 2 (main())
    assert "build-fusion --rebuild" in str(refused.exception) + refused.output


def test_fusion_follows_ingest_and_missing_vectors_are_explained(formula_setup: dict, tmp_path: Path) -> None:
    index = tmp_path / "index"
    shutil.copytree(formula_setup["index"], index)
    rag = MathRAG(make_settings(tmp_path, index_dir=index, formula={"models": str(formula_setup["models"])}))
    before = len(rag.index.marf_index())
    paper = tmp_path / "new.tex"
    paper.write_text(
        "\\documentclass{article}\\newtheorem{theorem}{Theorem}\\begin{document}"
        "\\begin{theorem}[Gaussian integral] $\\int_{-\\infty}^{\\infty} e^{-x^2}\\,dx = \\sqrt{\\pi}$.\\end{theorem}"
        "\\end{document}"
    )
    rag.ingest([paper])
    assert len(rag.index.marf_index()) == before + 1
    hits = rag.search(r"$\int_{-\infty}^{\infty} e^{-x^2} dx$", 3, "fusion")
    assert hits[0].record.name == "Gaussian integral"
    fresh = tmp_path / "fresh"
    shutil.copytree(formula_setup["index"], fresh, ignore=shutil.ignore_patterns("fusion"))
    rag = MathRAG(make_settings(tmp_path, index_dir=fresh, formula={"models": str(formula_setup["models"])}))
    rag.index.marf_index()._clear()
    with pytest.raises(MarfIndexError, match="build-fusion"):
        rag.search("x", 3, "fusion")


def test_untrained_fusion_is_the_dense_model(demo_index_dir: Path, tmp_path: Path) -> None:
    """The fusion layer's output starts at zero: fused vectors equal the text encoder's."""
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir))
    vocabulary = FormulaVocabulary.build([["x", "^", "{", "2", "}"]], min_count=1)
    torch.manual_seed(0)
    encoder = FormulaEncoder.new(vocabulary, FormulaEncoderConfig(dim=16, layers=1, heads=2, ffn_dim=32))
    fusion = MaRFFusion(FusionConfig(text_dim=384, formula_dim=16, heads=2, ffn_dim=32))
    fusion_encoder = MarfEncoder(rag.index.embedder, FormulaModels(tmp_path, encoder, fusion, {"identity": "t"}))
    texts = [r"Lemma. If $x^2 = 0$ then $x$ is nilpotent.", "No formula here."]
    fused = fusion_encoder.encode(texts, [[r"x^2 = 0", "x"], []])
    dense = rag.index.embedder.embed_documents(texts)
    for text, vector in zip(fused, dense, strict=True):
        assert np.allclose(text.vector, vector, atol=1e-5)


def test_eval_compares_the_formula_variants_with_sizes_and_latency(formula_setup: dict, tmp_path: Path) -> None:
    from rag_app.datasets.query_set import EvalQuery, Protocol
    from rag_app.evaluation import QuerySet

    rag = MathRAG(make_settings(tmp_path, index_dir=formula_setup["index"]))
    with_formulas = [r for r in rag.index.store.iter_records() if r.label and any(len(f) > 12 for f in r.formulas)]
    queries = tuple(
        EvalQuery(f"q{i}", f"${max(r.formulas, key=len)}$", {r.docno: 1}, (r.paper_id,), "formula")
        for i, r in enumerate(sorted(with_formulas, key=lambda r: r.docno)[:10])
    )
    set_path = tmp_path / "demo-formulas.v1.jsonl"
    QuerySet("demo-formulas", 1, Protocol.KNOWN_ITEM, queries, "demo formulas", "test").save(set_path)
    variants = ["dense", "hybrid", "hybrid-formula", "fusion", "fusion-maxsim", "formula"]
    args = ["eval", str(set_path), "--index", str(formula_setup["index"]), "--out", str(tmp_path / "out")]
    result = runner.invoke(app, [*args, *[a for v in variants for a in ("-r", v)]], env=formula_setup["env"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    scores = {r["name"]: r for r in report["sets"][0]["retrievers"]}
    assert list(scores) == variants
    assert all(s["p95_ms"] >= s["p50_ms"] > 0 for s in scores.values())
    # the lexical formula channel finds verbatim formulas
    assert scores["formula"]["aggregate"]["Hit@10"] >= 0.9
    sizes = next(iter(report["provenance"]["indexes"].values()))["index_bytes"]
    assert sizes["fusion_maxsim_tokens"] > 0 and sizes["formula_bm25"] > 0
