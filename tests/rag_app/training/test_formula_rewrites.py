"""sympy rewrites are equal to their anchor, near misses are not, and training the encoder on
them beats BM25 over formula tokens on held-out rewrites."""

from __future__ import annotations

import random

import pytest
import sympy
from sympy.parsing.latex import parse_latex

from rag_app.training.formula_encoder_trainer import FormulaEncoderTrainer
from rag_app.training.formula_equivalence_check import check_equivalence
from rag_app.training.formula_rewrites import (
    _numerically_equal,
    generate_pairs,
    near_miss,
    parse_formula,
    random_expression,
    rewrites,
)
from retriever.models.formula_encoder import FormulaEncoder, FormulaEncoderConfig


def test_rewrites_are_equal_and_near_misses_are_not() -> None:
    rng = random.Random(3)
    checked = 0
    for _ in range(30):
        expression = random_expression(rng)
        for kind, form in rewrites(expression, rng):
            if kind == "rename" or isinstance(form, str):
                continue  # a renamed formula is equal up to its variables; commuted ones are LaTeX
            assert _numerically_equal(expression, form, rng), (kind, expression, form)
            checked += 1
        miss = near_miss(expression, rng)
        if miss is not None:
            assert not _numerically_equal(expression, miss, rng)
    assert checked > 20


def test_commuted_latex_parses_back_to_the_same_expression() -> None:
    rng = random.Random(1)
    x, y = sympy.symbols("x y")
    expression = x**2 + 3 * y + x * y**3
    commuted = dict(rewrites(expression, rng))["commute"]
    assert commuted != sympy.latex(expression)
    assert sympy.simplify(parse_latex(commuted, backend="lark") - expression) == 0


def test_corpus_formulas_parse_when_sympy_can_read_them() -> None:
    assert parse_formula(r"\frac{x^2-1}{x+1}") is not None
    assert parse_formula(r"\mathcal{O}_X \to \mathcal{F}") is None  # filtered before sympy
    assert parse_formula(r"a, b") is None


@pytest.mark.slow
def test_pairs_generated_in_workers_are_the_pairs_generated_in_one_process() -> None:
    assert generate_pairs(70, seed=5, workers=2) == generate_pairs(70, seed=5)


@pytest.fixture(scope="module")
def pairs() -> tuple[list, list]:
    # Two workers: the same pairs (each chunk has its own seed, and the pool keeps their order), in half the time.
    train = generate_pairs(800, seed=1, workers=2)
    held = generate_pairs(150, seed=99, workers=2)
    seen = {p.anchor for p in train} | {p.positive for p in train}
    return train, [p for p in held if p.anchor not in seen and p.positive not in seen]


@pytest.mark.slow
def test_generated_pairs_have_kinds_and_negatives(pairs: tuple[list, list]) -> None:
    train, held = pairs
    assert len(train) == 800 and len(held) > 50
    kinds = {p.kind for p in train}
    assert {"expand", "factor", "rename", "commute"} <= kinds
    assert sum(1 for p in train if p.negative) > 600
    assert all(p.anchor != p.positive for p in train)


@pytest.mark.slow
def test_a_briefly_trained_encoder_beats_bm25_on_held_out_rewrites(pairs: tuple[list, list], tmp_path) -> None:
    train, held = pairs
    config = FormulaEncoderConfig(dim=64, layers=1, heads=2, ffn_dim=128, max_tokens=48)
    run = FormulaEncoderTrainer(config, steps=120, batch_size=64, learning_rate=1e-3).train(train, [])
    assert run.last_loss < run.first_loss
    results = check_equivalence(held, {"encoder": run.encoder})
    assert results["encoder"]["MRR@10"] > results["bm25 (formula terms)"]["MRR@10"]
    # saved in half precision and loaded back: the same ranking
    run.encoder.save(tmp_path / "encoder")
    loaded = FormulaEncoder.load(tmp_path / "encoder")
    assert check_equivalence(held, {"encoder": loaded})["encoder"]["Hit@1"] == pytest.approx(
        results["encoder"]["Hit@1"], abs=0.02
    )


def test_a_pair_no_point_can_evaluate_is_neither_equal_nor_a_near_miss() -> None:
    """Issue 93: ``_numerically_equal`` said equal when every evaluation failed (an undefined function of the
    symbols cannot be evaluated to a number at any point)."""
    from rag_app.training.formula_rewrites import _numerically_different

    x = sympy.Symbol("x")
    unknown = sympy.Function("f")(x)
    assert not _numerically_equal(unknown, unknown + 1, random.Random(0))
    assert not _numerically_different(unknown, unknown + 1, random.Random(0))
    assert _numerically_equal(sympy.sin(x) ** 2 + sympy.cos(x) ** 2, sympy.Integer(1) + 0 * x, random.Random(0))


def test_a_formula_sympy_cannot_read_is_skipped_and_a_bug_is_raised() -> None:
    """Issue 93: every exception was swallowed, a bug in a rewrite along with a formula sympy cannot read."""
    from rag_app.training.formula_rewrites import _limited

    assert parse_formula(r"\frac{x}{") is None  # sympy cannot read it: skipped

    def buggy() -> sympy.Expr:
        raise NameError("name 'expresion' is not defined")

    with pytest.raises(NameError):
        _limited(buggy)
