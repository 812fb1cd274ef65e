"""Reading yes/no questions and statements into claims, and comparing them: pure text, no setting, no model.

``yes_no_questions`` (is it a yes/no question, does it negate), ``claim_terms`` (the words, numbers and
formulas compared), ``statement_claims`` (a statement's hypotheses and conclusions), ``claim_comparison``
(the comparison). The learned chooser reads them as features (:mod:`rag_app.answering.source_features`); what the
answer says its quote settles is the trained verdict's (:mod:`rag_app.answering.verdict`).
"""

from rag_app.answering.claims.claim_comparison import ClaimComparison, Verdict, compare
from rag_app.answering.claims.statement_claims import StatementClaim, statement_claims
from rag_app.answering.claims.vocabulary import negates
from rag_app.answering.claims.yes_no_questions import is_yes_no_question, topic_overlap

__all__ = [
    "ClaimComparison",
    "StatementClaim",
    "Verdict",
    "compare",
    "is_yes_no_question",
    "negates",
    "statement_claims",
    "topic_overlap",
]
