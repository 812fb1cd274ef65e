"""Which kind of statement an environment holds: a theorem, a lemma, a definition, ... by its printed
title or its name's usual abbreviations; and which environments are proofs."""

from __future__ import annotations

import re
import unicodedata

from pylatexenc.latex2text import LatexNodes2Text

from ingestion.records import StatementKind

_HEADING_TEXT = LatexNodes2Text(math_mode="verbatim", strict_latex_spaces=False)

# Order matters only for titles holding two keywords; the earliest keyword in the title wins.
KIND_KEYWORDS: dict[str, StatementKind] = {
    "theorem": StatementKind.THEOREM,
    "lemma": StatementKind.LEMMA,
    "proposition": StatementKind.PROPOSITION,
    "corollary": StatementKind.COROLLARY,
    "definition": StatementKind.DEFINITION,
    "conjecture": StatementKind.CONJECTURE,
    "remark": StatementKind.REMARK,
    "example": StatementKind.EXAMPLE,
    "claim": StatementKind.CLAIM,
    "fact": StatementKind.FACT,
    "observation": StatementKind.OBSERVATION,
    "exercise": StatementKind.EXERCISE,
    "problem": StatementKind.PROBLEM,
    "question": StatementKind.QUESTION,
    "notation": StatementKind.NOTATION,
    "assumption": StatementKind.ASSUMPTION,
    "axiom": StatementKind.AXIOM,
    "hypothesis": StatementKind.HYPOTHESIS,
    "situation": StatementKind.SITUATION,
    "construction": StatementKind.CONSTRUCTION,
    "principle": StatementKind.THEOREM,
    "criterion": StatementKind.THEOREM,
    "property": StatementKind.FACT,
    # arXiv also receives French, German, Spanish, Italian and Portuguese papers (accents removed).
    "theoreme": StatementKind.THEOREM,
    "teorema": StatementKind.THEOREM,
    "hilfssatz": StatementKind.LEMMA,
    "satz": StatementKind.THEOREM,
    "lemme": StatementKind.LEMMA,
    "lema": StatementKind.LEMMA,
    "proposicion": StatementKind.PROPOSITION,
    "proposizione": StatementKind.PROPOSITION,
    "proposicao": StatementKind.PROPOSITION,
    "corollaire": StatementKind.COROLLARY,
    "corolario": StatementKind.COROLLARY,
    "corollario": StatementKind.COROLLARY,
    "korollar": StatementKind.COROLLARY,
    "folgerung": StatementKind.COROLLARY,
    "definicion": StatementKind.DEFINITION,
    "definizione": StatementKind.DEFINITION,
    "definicao": StatementKind.DEFINITION,
    "vermutung": StatementKind.CONJECTURE,
    "congettura": StatementKind.CONJECTURE,
    "conjetura": StatementKind.CONJECTURE,
    "remarque": StatementKind.REMARK,
    "bemerkung": StatementKind.REMARK,
    "observacion": StatementKind.OBSERVATION,
    "osservazione": StatementKind.REMARK,
    "exemple": StatementKind.EXAMPLE,
    "beispiel": StatementKind.EXAMPLE,
    "ejemplo": StatementKind.EXAMPLE,
    "esempio": StatementKind.EXAMPLE,
    "exemplo": StatementKind.EXAMPLE,
    "exercice": StatementKind.EXERCISE,
    "ubung": StatementKind.EXERCISE,
    "ejercicio": StatementKind.EXERCISE,
    "esercizio": StatementKind.EXERCISE,
    "propriete": StatementKind.FACT,
    "eigenschaft": StatementKind.FACT,
    "propiedad": StatementKind.FACT,
}

# Environment names that papers use without declaring (amsthm class defaults, common macros).
_ABBREVIATIONS: dict[str, StatementKind] = {
    "thm": StatementKind.THEOREM,
    "theo": StatementKind.THEOREM,
    "thrm": StatementKind.THEOREM,
    "lem": StatementKind.LEMMA,
    "lemm": StatementKind.LEMMA,
    "prop": StatementKind.PROPOSITION,
    "pro": StatementKind.PROPOSITION,
    "cor": StatementKind.COROLLARY,
    "coro": StatementKind.COROLLARY,
    "corr": StatementKind.COROLLARY,
    "defn": StatementKind.DEFINITION,
    "def": StatementKind.DEFINITION,
    "dfn": StatementKind.DEFINITION,
    "defi": StatementKind.DEFINITION,
    "conj": StatementKind.CONJECTURE,
    "rem": StatementKind.REMARK,
    "rmk": StatementKind.REMARK,
    "rema": StatementKind.REMARK,
    "ex": StatementKind.EXAMPLE,
    "exa": StatementKind.EXAMPLE,
    "exm": StatementKind.EXAMPLE,
    "expl": StatementKind.EXAMPLE,
    "eg": StatementKind.EXAMPLE,
    "obs": StatementKind.OBSERVATION,
    "exer": StatementKind.EXERCISE,
    "exo": StatementKind.EXERCISE,
    "prob": StatementKind.PROBLEM,
    "qn": StatementKind.QUESTION,
    "ques": StatementKind.QUESTION,
    "nota": StatementKind.NOTATION,
    "notn": StatementKind.NOTATION,
    "assu": StatementKind.ASSUMPTION,
    "ass": StatementKind.ASSUMPTION,
    "hyp": StatementKind.HYPOTHESIS,
    "ax": StatementKind.AXIOM,
    "teo": StatementKind.THEOREM,
    "teor": StatementKind.THEOREM,
    "bem": StatementKind.REMARK,
    "bsp": StatementKind.EXAMPLE,
    "folg": StatementKind.COROLLARY,
    "rmq": StatementKind.REMARK,
    "rque": StatementKind.REMARK,
    "xca": StatementKind.EXERCISE,  # LyX's exercise
}


def kind_for(env_name: str, title: str = "") -> StatementKind | None:
    """Canonical kind of a theorem-like environment, from its printed title or its name."""
    from_title = title_kind(title)
    if from_title is not None:
        return from_title
    base = env_name.rstrip("*").lower()
    if base in KIND_KEYWORDS:
        return KIND_KEYWORDS[base]
    if base in _ABBREVIATIONS:
        return _ABBREVIATIONS[base]
    if base.endswith("ies") and base[:-3] + "y" in KIND_KEYWORDS:  # "corollaries"
        return KIND_KEYWORDS[base[:-3] + "y"]
    if base.endswith("s") and base[:-1] in KIND_KEYWORDS:  # "remarks", "examples"
        return KIND_KEYWORDS[base[:-1]]
    return StatementKind.OTHER if title else None


# Proofs hold no statement, whatever command declares them (llncs's ``\\spnewtheorem*{proof}``,
# ntheorem's ``\\newtheorem*{proof}{Proof}``): by name, or by a printed title that says proof.
_PROOF_NAMES = frozenset(
    {"proof", "pf", "prf", "demo", "dem", "preuve", "beweis", "bew", "demostracion", "dimostrazione", "prova"}
)
_PROOF_TITLE_WORDS = frozenset({"proof", "preuve", "beweis", "demonstration", "demostracion", "dimostrazione"})


def is_proof_environment(name: str, title: str = "") -> bool:
    """``proof``, ``proof*``, ``pf``, ``Proof``, or an environment whose title is "Proof of ..." and
    names no statement kind."""
    if name.rstrip("*").lower() in _PROOF_NAMES:
        return True
    words = re.findall(r"[a-z]+", without_accents(title).lower()) if title else []
    if words and words[0] in _PROOF_TITLE_WORDS:  # "Proof of the main theorem"
        return True
    return title_kind(title) is None and bool(_PROOF_TITLE_WORDS & set(words))


def title_kind(title: str) -> StatementKind | None:
    """The kind a printed heading names ("Hopf--Rinow theorem" is a theorem, "Th\\'eor\\`eme" too),
    if it names one. A title left as a macro (``\\protect\\lemmaname`` where the document does not
    define it) names its kind by the macro's name."""
    for text in (without_accents(title), title):
        lowered = text.lower()
        hits = [(lowered.find(word), kind) for word, kind in KIND_KEYWORDS.items() if word in lowered]
        if hits:
            return min(hits, key=lambda hit: hit[0])[1]
    return None


# pylatexenc reads TeX accents (``\\'e``, ``\\c{c}``) as the rest of ingestion does.


def without_accents(title: str) -> str:
    """``Th\\'eor\\`eme`` and ``Théorème`` to ``Theoreme``."""
    plain = _HEADING_TEXT.latex_to_text(title) if "\\" in title else title
    return "".join(c for c in unicodedata.normalize("NFKD", plain) if not unicodedata.combining(c))
