"""How much of a query is formula (the evaluation's slices); the measure lives with the retriever,
which weighs its second embedding model by it (``retriever.formulas.formula_share``)."""

from retriever.formulas.formula_share import SLICES, formula_share, formula_slice, formula_tokens

__all__ = ["SLICES", "formula_share", "formula_slice", "formula_tokens"]
