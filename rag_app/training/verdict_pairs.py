"""(question, statement, verdict) pairs for training a verdict reader, made by rule from the statements' text.

Verdicts: ``yes`` (the statement proves the claim asked), ``no`` (it refutes it), ``answers`` (an open question it
answers), ``related`` (same objects, not settled: a hypothesis dropped, the converse, a stronger conclusion, another
statement of its section), ``unrelated`` (a question about a statement of another chapter). No LLM: a statement is
read as context ("Let $R$ be a ring."), conditions (if-clauses, "Assume" sentences, lists) and a conclusion, or as an
equivalence or a definition, its math masked as ``⟪i⟫``: the rules read prose only and the LaTeX comes back verbatim.
What reads as none of these shapes makes no pairs: better no question than garbage.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ingestion.records import StatementKind, StatementRecord

LABELS = ("yes", "no", "answers", "related", "unrelated")
FORMAT, VERSION = "rag-app-verdict-pairs", 1
MAX_QUESTION_CHARS = 400
_KINDS = {StatementKind.THEOREM, StatementKind.LEMMA, StatementKind.PROPOSITION, StatementKind.COROLLARY,
          StatementKind.CLAIM, StatementKind.FACT, StatementKind.OBSERVATION, StatementKind.DEFINITION}
# Hypotheses as adjectives ("Let $R$ be a Noetherian ring"): dropping one leaves a weaker, well-formed question.
_ADJECTIVES = ("locally Noetherian|quasi-compact|quasi-separated|quasi-coherent|finitely presented|faithfully flat|"
               "universally catenary|Cohen-Macaulay|Noetherian|Artinian|reduced|integral|normal|regular|local|finite|"
               "flat|smooth|étale|proper|separated|affine|Henselian|complete|excellent|Gorenstein|coherent|injective|"
               "surjective|unramified|Jacobson|irreducible|connected|nonempty|free|perfect|compact")
# A conclusion's predicate and a strictly stronger one: the statement never settles the stronger claim.
_STRONGER = {"injective": "bijective", "surjective": "bijective", "open": "open and closed", "flat": "faithfully flat",
             "separated": "proper", "quasi-compact": "finite", "quasi-finite": "finite", "unramified": "étale",
             "smooth": "étale", "monomorphism": "isomorphism", "epimorphism": "isomorphism", "left exact": "exact",
             "right exact": "exact", "locally free": "free", "locally of finite type": "of finite type",
             "locally of finite presentation": "of finite presentation"}
_WEAK = re.compile(r"^ ((?:a|an) )?(" + "|".join(sorted(map(re.escape, _STRONGER), key=len, reverse=True))
                   + r")(?![\w-])(?! (?:cover|covering|neighbourhood|neighborhood))")
_ADJECTIVE = re.compile(rf"(?<=\s)({_ADJECTIVES}) (?!type|presentation|over|as)(?=\S)")
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$]+\$|\\\[.+?\\\]|\\\(.+?\\\)", re.S)
_SLOT = re.compile(r"⟪(\d+)⟫")
# Prose that points elsewhere ("of Lemma 6.6", "(5.2)", "as above") or kept LaTeX markup: no question reads well.
_REFERENCE = re.compile(r"\b(?:Lemma|Proposition|Theorem|Definition|Situation|Section|Remark|Example|Exercise|Corolla"
                        r"ry|Equation|Chapter)s? \d|\(\d+(?:\.\d+)+\)|\[[\w:-]*\]|\b(?:above|below|previous|following"
                        r"(?! (?:are|is) equivalent)|[Ww]e have seen|as in)\b|\\|[{}]|``|''|\([A-Z]\)")
_CLAUSE = re.compile(r"^(?P<s>.+?) (?P<v>has|have|holds|hold|exists|exist|commutes|commute|satisfies|satisfy|admits|"
                     r"admit|contains|contain|induces|induce|preserves|preserve|vanishes|vanish|factors|factor|lifts|"
                     r"lift|extends|extend|is|are)\b(?P<p>.*)$")
_THERE = re.compile(r"^[Tt]here (?P<v>exists|exist|is|are) (?P<x>(?!no\b).+)$")
_COMPOUND = re.compile(r"\b(?:is|are|has|have)\b|\b(?:and|but) (?:its|the|this)\b")  # "... is flat and its ... is"
_UNNEGATABLE = re.compile(r"^\s*(?:not|never|no)\b|\b(?:or|either|some|at least|at most|unless|only if|neither|nor)\b")
_SETUP = re.compile(r"^(?:Let|Fix|Consider|Denote|Given|Write|Set)\b")
_ASSUME = re.compile(r"^(?:Assume|Suppose)(?: that)?\s*(?P<c>.*?)[.:]?$")
_IF_THEN = (re.compile(r"^(?:If|Suppose|Assume)(?: that)? (?P<c>.+?)[,;]? then,? (?P<x>.+)$"),
            re.compile(r"^If (?P<c>[^,]+), (?P<x>(?!then\b).+)$"))
_DEICTIC = re.compile(r"^(?:so|also|this|it|these|those|they|the same|such|let|suppose|assume)\b|\b(?:so is|so are|"
                      r"as well|define|denote|we say|we call|we write)\b")
_LET = re.compile(r"^Let (?P<o>⟪\d+⟫) be (?P<np>(?:a|an) [^,;]+?)\.$")
_LOWER = re.compile(r"^(The|Every|Any|Each|For|There|A|An|All|No|In|If|Then|Via|Given|With|Under|On|At|Since|Its|This|"
                    r"These|Such|Some|Here|Both|Over|After|Assume|Assuming|Suppose|Let|When|Whenever|As|To|Using)\b")
_NOT_A_SUBJECT = re.compile(r"(?:it|this|that|we|one|they|these|either|for|in|on|at|by|via|with|under|given|since|"
                            r"after|over|here|suppose|assume|assuming|let)\b|.*(?:\b(?:if|such|which|when|where|there|"
                            r"that)\b|;)", re.I)
_TERM = r"(?P<a>(?:a|an) )?(?P<t>(?:[\w' -]|⟪\d+⟫){2,40}?(?: over ⟪\d+⟫)?)"
_DEFINITIONS = (  # with a subject and a condition ("We say $M$ is simple if ..."), then noun definitions
    re.compile(rf"^We say(?: that)? (?P<s>.+?) is {_TERM} if (?:and only if )?(?P<c>.+)$"),
    re.compile(rf"^(?P<n>(?:A|An) [^,⟪]+?)(?: (?P<s>⟪\d+⟫))? is called {_TERM} if (?:and only if )?(?P<c>.+)$"),
    re.compile(rf"^(?P<s>.+?) is (?:said to be|called) {_TERM} if (?:and only if )?(?P<c>.+)$"),
    re.compile(r"^The (?P<t>[\w -]{2,40}?) of (?P<s>⟪\d+⟫) is (?P<c>(?:a|an|the) .+)$"),
    re.compile(r"^(?P<a>A|An) (?P<t>[\w -]{2,30}?) is (?P<c>(?:a|an|the) .+)$"))
_RELATION = re.compile(r"\\(?:cong|simeq|leq|geq|subset|lesssim)(?![a-zA-Z])|(?<![:<>!\\])=")
_RELATIONS = {"=": ("\\neq", "What is {}?"), "\\cong": ("\\not\\cong", "What is {} isomorphic to?"), "\\simeq": (
    "\\not\\simeq", "What is {} isomorphic to?"), "\\leq": (">", "What upper bound holds for {}?"), "\\geq": (
    "<", "What lower bound holds for {}?"), "\\subset": ("\\not\\subset", "What is {} contained in?"), "\\lesssim": (
    "\\not\\lesssim", "What upper bound holds for {}?")}  # a relation: its negation, the open question it answers
Draft = tuple[str, str, str]  # (label, kind, question with its math masked)
_lower = functools.partial(_LOWER.sub, lambda m: m.group(1).lower())  # "The composition ..." to "the composition ..."


@dataclass(frozen=True, slots=True)
class VerdictPair:
    question: str
    statement_id: str  # the record id of the statement shown beside the question
    label: str  # one of LABELS
    kind: str  # the rule that made it: "restated", "negated", "dropped-hypothesis", "other-chapter", ...
    corpus: str  # the statement's corpus ("stacks-project", ...)

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VerdictPair:
        if data["label"] not in LABELS:
            raise ValueError(f"unknown verdict label {data['label']!r}; known: {', '.join(LABELS)}")
        return cls(data["question"], data["statement_id"], data["label"], data["kind"], data.get("corpus", ""))


@dataclass(frozen=True, slots=True)
class _Claim:
    """A statement read as context, conditions and conclusion, its math masked as ``⟪i⟫`` (``spans[i]``)."""

    context: tuple[str, ...]  # whole sentences: "Let ⟪0⟫ be a Noetherian ring."
    conditions: tuple[str, ...]  # clauses: "⟪1⟫ is finite"
    conclusion: str  # a clause: "⟪1⟫ is finitely presented"
    shape: str
    parts: tuple[str, ...]  # equivalent clauses, or a definition's subject, article, term, condition, noun, pattern
    spans: tuple[str, ...]


def make_pairs(records: Sequence[StatementRecord], rng: random.Random, per_statement: int = 4,
               corpus_of: Callable[[StatementRecord], str] = lambda record: record.source.value,
               show_progress: bool = False) -> list[VerdictPair]:
    """At most ``per_statement`` pairs for each statement that parses, spread over the labels it allows: questions
    from its parse; ``related`` also takes a yes-question of another statement of its section (``other-object``),
    ``unrelated`` a yes- or open question of a statement of another paper (chapter) whose prose shares few words with
    it (``other-chapter``). The same records and seed give the same pairs."""
    own = [_questions(record, rng) for record in tqdm(records, "verdict pairs", disable=not show_progress)]
    asked = [i for i, questions in enumerate(own) if questions]
    sections: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i in asked:
        sections[(records[i].paper_id, records[i].section)].append(i)
    words = [set(re.findall(r"[a-z][a-z-]{4,}", _MATH.sub(" ", record.text).lower())) for record in records]
    pairs: list[VerdictPair] = []
    for i in asked:
        record, candidates = records[i], defaultdict(list, {label: list(found) for label, found in own[i].items()})
        if neighbours := [j for j in sections[(record.paper_id, record.section)] if j != i and record.section]:
            candidates["related"].append(("other-object", rng.choice(own[rng.choice(neighbours)]["yes"])[1]))
        far = next((j for j in (rng.choice(asked) for _ in range(10)) if records[j].paper_id != record.paper_id and len(
            words[i] & words[j]) < 0.34 * max(1, min(len(words[i]), len(words[j])))), None)
        if far is not None:
            candidates["unrelated"].append(("other-chapter", rng.choice([*own[far]["yes"], *own[far].get("answers",
                                                                                                          [])])[1]))
        mine = {question for found in own[i].values() for _, question in found}
        for label, kind, question in _chosen(candidates, rng, per_statement):
            if kind not in ("other-object", "other-chapter") or question not in mine:
                pairs.append(VerdictPair(question, record.id, label, kind, corpus_of(record)))
    return pairs


def write_pairs(pairs: Sequence[VerdictPair], path: Path) -> None:
    """JSON Lines: a header with the format, version and counts by label, then one pair a line."""
    counts = Counter(pair.label for pair in pairs)
    header = {"format": FORMAT, "version": VERSION, "counts": {label: counts[label] for label in LABELS}}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line, ensure_ascii=False) + "\n" for line in [header, *map(asdict, pairs)])


def read_pairs(path: Path) -> list[VerdictPair]:
    with path.open(encoding="utf-8") as handle:
        header = json.loads(handle.readline() or "{}")
        if header.get("format") != FORMAT or header.get("version") != VERSION:
            raise ValueError(f"{path}: not a version-{VERSION} {FORMAT} file (header {header})")
        return [VerdictPair.from_dict(json.loads(line)) for line in handle if line.strip()]


def _parse(record: StatementRecord, rng: random.Random) -> _Claim | None:
    """The statement's claim, or None when its text has no shape the questions can be built on."""
    text = re.sub(r"\\(label|c?ref|eqref|Cref|cite[pt]?|emph|textit|textbf)(?:\[[^\]]*\])?\{([^{}]*)\}", lambda m: (
        "" if m[1] == "label" else m[2] if m[1][0] in "et" else f"[{m[2]}]"), record.text)  # a reference: "[label]"
    text = re.sub(r"\\item(?:\[[^\]]*\])?", "\n* ", re.sub(r"\\(?:begin|end)\{(?:enumerate|itemize)\}", "\n", text))
    spans: list[str] = []  # a display is marked ¶: the sentence before it may end without a full stop
    masked = _MATH.sub(lambda m: "" if spans.append(m.group(0)) else f"⟪{len(spans) - 1}⟫" + "¶" * (
        m.group(0)[:2] in ("$$", "\\[")), text)
    masked = re.sub(r"\s*\[[^\[\]]* [^\[\]]*\]", "", masked)  # citations, footnotes: "[WhatExact, Corollary 1]"
    masked = re.sub(r",?\s*\(?\bsee\b[^.()]*?\[[\w:-]+\]\)?|\s*\([^()]*\[[\w:-]+\][^()]*\)", "", masked)
    head, *items = (" ".join(part.split()) for part in re.split(r"\n\s*\*\s+", "\n" + masked))
    if _REFERENCE.search(" ".join([head, *items])) or any(item.endswith(":") or not item for item in items):
        return None
    sentences, tail = _sentences(head), _sentences(items[-1]) if items else []
    if items:  # the text after a list ends its last item: "Assume * $f$ is proper. Then ..."
        items[-1] = tail.pop(0)
        sentences += tail if tail and tail[0].startswith("Then") else []
    items = [_clause(re.sub(r"(?:[,;.]|,? and|,? or)$", "", item.replace("¶", ""))) for item in items]
    context, conditions = list[str](), list[str]()
    while sentences:
        assumed = _ASSUME.match(sentences[0])
        if _SETUP.match(sentences[0]):
            context.append(sentences.pop(0).rstrip(".") + ".")
        elif re.fullmatch(r"(?:If|Assume|Suppose)(?: that)?:?", sentences[0]) and items:
            conditions += items[:-1] + _conjuncts(items[-1])
            condition, sentences[0] = _if_then(f"If {conditions.pop()}") or ("", "")  # "If * $a$ * $b$, then $c$."
            conditions, items = [*conditions, condition], []
        elif assumed and assumed["c"] and not re.search(r"\b(?:such that|then)\b", assumed["c"]):
            conditions += _conjuncts(assumed["c"])
            sentences.pop(0)
        else:
            break
    if record.kind is StatementKind.DEFINITION:  # set-up anywhere; the first sentences or an item that defines
        context += [sentence for sentence in sentences if _SETUP.match(sentence)]
        options = [*[sentence for sentence in sentences if not _SETUP.match(sentence)][:2], *items]
        for option, (index, pattern) in itertools.product(rng.sample(options, len(options)), enumerate(_DEFINITIONS)):
            found = pattern.match(option.rstrip("."))
            if found and len(found["t"].split()) <= 5 and not re.search(r",| is ", found["t"]):
                part = {name: (found.groupdict().get(name) or "").strip() for name in "satcn"}
                subject = _lower(part["s"]) or "it" * bool(part["n"])
                fields = (subject, part["a"].lower(), part["t"], part["c"], part["n"], str(index))
                return _Claim(tuple(context), (), part["c"], "definition", fields, tuple(spans))
        return None
    claim = _clause(sentences[0] if sentences else "")
    listed = re.fullmatch(r"If (.+?),? then:?", claim)  # "If $A$, then * $B$ * $C$"
    condition, claim = (listed.group(1), "") if listed and items else _if_then(claim) or ("", claim)
    conditions += _conjuncts(condition) if condition else []
    if re.search(r"\bthe following (?:are|is) equivalent", claim, re.I):
        fine = len(items) >= 2 and all(conditions)
        return _Claim(tuple(context), tuple(conditions), "", "equivalent", tuple(items), tuple(spans)) if fine else None
    if (not claim or claim.endswith(":") or re.search(r"\bthe following\b", claim)) and items and sentences:
        item = rng.choice(items)
        condition, claim = _if_then(item) or ("", item)
        conditions += _conjuncts(condition) if condition else []
    elif items and len(sentences) == 1 and not sentences[0].endswith("."):  # a list ends it: "There exist * ..."
        return None
    claim = _clause(re.split(r" \((?:b|ii|2)\) ", claim)[0])
    if not (_CLAUSE.match(claim) or _THERE.match(claim) or _formula(claim, spans)) or claim.endswith(":") or any(
            _DEICTIC.search(clause) or not clause for clause in [claim, *conditions]):
        return None
    sides = claim.split(" if and only if ")
    shape = "equivalent" if len(sides) == 2 and all(len(side.split()) >= 2 for side in sides) else "implication"
    return _Claim(tuple(context), tuple(conditions), claim, shape, tuple(sides), tuple(spans))


def _clause(text: str) -> str:
    """A clause without its lead-in ("Then", "we have", "(a)") and final punctuation."""
    text = re.sub(r"^(?:\((?:[a-h]|i{1,3}|\d)\)\s*)?(?:(?:Then|In this case|Under these assumptions),?\s*)?", "", text)
    return re.sub(r"^(?:[Ww]e have|[Oo]ne has)(?:\s+|:?$)", "", text).strip(" ,;.")


def _if_then(sentence: str) -> tuple[str, str] | None:
    """``(condition, conclusion)`` of "If A, then B" (or "If A, B" with one comma), else None."""
    found = _IF_THEN[0].match(sentence) or _IF_THEN[1].match(sentence)
    return (found["c"], found["x"]) if found else None


def _sentences(text: str) -> list[str]:
    """``text`` (math masked) cut into sentences; abbreviations ("i.e.", "resp.") do not end one."""
    text = re.sub(r"\b(i\.e|e\.g|resp|cf|etc)\.", lambda m: m.group(1).replace(".", "\x07") + "\x07", text)
    parts = re.split(r"(?<=\.)\s+(?=[A-Z⟪])|(?<=⟫)\s+(?=(?:Then|Hence|Moreover|If|Let|Assume|In particular)\b)|"
                     r"(?<=¶)\s*(?=[A-Z])", text)
    return [part.replace("\x07", ".").replace("¶", "").strip() for part in parts if part.strip("¶ ")]


def _conjuncts(text: str) -> list[str]:
    """``text`` split at its top-level ``and``s when every part is a clause with a verb, else whole."""
    text = re.sub(r"(^|\s)\((?:[a-h]|i{1,3}|iv|v|\d)\)\s*", r"\1", text)  # enumerators: "(a) $f$ is open"
    parts = [part.strip() for part in re.split(r",\s*(?:and\s+)?(?:that\s+)?|\s+and\s+(?:that\s+)?", text)]
    return parts if all(_CLAUSE.match(part) or _SLOT.fullmatch(part) for part in parts) else [text.strip()]


def _questions(record: StatementRecord, rng: random.Random) -> dict[str, list[tuple[str, str]]]:
    """The statement's own questions by label, each ``(kind, question)``; none unless a yes-question is among them."""
    claim = _parse(record, rng) if record.kind in _KINDS else None
    makers = {"definition": _definition_questions, "equivalent": _equivalence_questions}
    finished: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for label, kind, draft in makers.get(claim.shape, _implication_questions)(claim, rng) if claim else []:
        question = _finish(draft, claim.spans) if claim else ""
        if question and question not in {q for found in finished.values() for _, q in found}:
            finished[label].append((kind, question))
    return dict(finished) if finished.get("yes") else {}


def _implication_questions(c: _Claim, rng: random.Random) -> list[Draft]:
    (yes, no, negation), conditions, conclusion = _forms(c.conclusion, c.spans), list(c.conditions), c.conclusion
    drafts = [("yes", "restated", _ask(c.context, conditions, yes, rng)),
              ("no", "negated", _ask(c.context, conditions, no, rng))]
    lets = [_LET.match(sentence) for sentence in c.context]
    if lets and negation and all(let and not re.search(r"\b(?:which|that|such|with|over|where|whose|in|on|from|to|let)"
                                                       r"\b|⟫$", let["np"]) for let in lets):
        objects = " and ".join(f"{let['np']} {let['o']}" for let in lets if let)
        such = " and ".join(map(_lower, [*conditions, negation]))
        drafts.append(("no", "counterexample", f"Is there {objects} such that {such}?"))
    subject, formula = _subject(conclusion), _formula(conclusion, c.spans)
    quantified = re.match(r"(?:every|any|each) (.+)", subject)
    asked = [f"What properties does every {quantified.group(1)} have?"] if quantified else [f"What can be said about "
             f"{subject}?", *[f"What properties does {subject} have?"] * bool(_SLOT.fullmatch(subject))]
    drafts += [("answers", "open-question", _ask(c.context, conditions, asked, rng))] * bool(subject)
    if formula:
        body = _RELATIONS[formula[1]][1].format(f"${formula[0]}$")
        drafts.append(("answers", "formula-question", _ask(c.context, conditions, body, rng)))
    drafts += _weakened(c, [conclusion], rng)
    converses = _removable(c, conditions, [conclusion])
    if converses:  # a condition that names only known objects becomes the question; the conclusion is assumed
        k = rng.choice(converses)
        rest = [*conditions[:k], *conditions[k + 1 :], conclusion]
        drafts.append(("related", "converse", _ask(c.context, rest, _forms(conditions[k])[0], rng)))
    for i, sentence in rng.sample(list(enumerate(c.context)), len(c.context)) if not conditions else []:
        let = _LET.match(sentence)  # "Let $R$ be a Noetherian ring. Then C." to "Let $R$ be a ring. If C, is $R$ ...?"
        adjective = _ADJECTIVE.search(sentence, let.start("np")) if let else None
        if let and adjective and adjective.start() <= let.start("np") + 3:  # not "a module over a Noetherian ring"
            context = [*c.context[:i], _without(sentence, adjective, c.spans), *c.context[i + 1 :]]
            bodies = _forms(f"{let['o']} is {adjective.group(1)}")[0]
            drafts.append(("related", "converse", _ask(context, [conclusion], bodies, rng)))
            break
    copula = _CLAUSE.match(conclusion)
    weak = _WEAK.match(copula["p"]) if copula and copula["v"] in ("is", "are") and subject else None
    if copula and weak:
        word = _STRONGER[weak.group(2)]
        stronger = f"{copula['s']} {copula['v']} {_article(word) + ' ' if weak.group(1) else ''}{word}"
        bodies = _forms(stronger + copula["p"][weak.end() :])[0]
        drafts.append(("related", "stronger-conclusion", _ask(c.context, conditions, bodies, rng)))
    return drafts


def _equivalence_questions(c: _Claim, rng: random.Random) -> list[Draft]:
    first, second = rng.sample(c.parts, 2)
    (yes, no, _), conditions = _forms(second, c.spans), list(c.conditions)
    both = f"Is it true that {_lower(first)} if and only if {_lower(second)}?"
    drafts = [("yes", "restated", _ask(c.context, conditions, both, rng)),
              ("yes", "equivalence-direction", _ask(c.context, [*conditions, first], yes, rng)),
              ("no", "negated", _ask(c.context, [*conditions, first], no, rng))]
    copula = _CLAUSE.match(c.parts[0]) if len(c.parts) == 2 and _subject(c.parts[0]) else None  # what an iff defines
    if copula and copula["v"] in ("is", "are") and not re.search(r"\b(?:is|are|has|have)\b", copula["p"]):
        body = f"Under which conditions {copula['v']} {_lower(copula['s'])}{copula['p']}?"  # "... is $M$ flat?"
        drafts.append(("answers", "criterion-question", _ask(c.context, conditions, body, rng)))
    copula = _CLAUSE.match(first)
    if copula and copula["v"] in ("is", "are") and _subject(first):
        gerund = f"{_lower(copula['s'])} being{copula['p']}"
        bodies = [f"Which conditions are equivalent to {gerund}?", f"How can one characterize {gerund}?"]
        drafts.append(("answers", "criterion-question", _ask(c.context, conditions, bodies, rng)))
    return drafts + _weakened(c, [second], rng, premises=[first])


def _definition_questions(c: _Claim, rng: random.Random) -> list[Draft]:
    subject, article, term, condition, noun, pattern = c.parts
    if int(pattern) >= 3:  # "The Chow cohomology of $X$ is ...", "An ordinal is ..."
        phrase = f"{article} {term}" if article else f"the {term} of {subject}"
        return [("yes", "restated", _ask(c.context, [], f"Is {phrase} {condition}?", rng)),
                ("answers", "definition-question", _ask(c.context, [], f"What is {phrase}?", rng))]
    predicate = f"{article} {term}".strip()
    named = " ".join(part for part in (_lower(noun), "" if subject == "it" else subject) if part)
    asked = [f"What does it mean for {named} to be {predicate}?", f"When is {named} called {predicate}?"]
    drafts = [("yes", "restated", _ask(c.context, [], f"Is {named} {predicate} if and only if {condition}?", rng)),
              ("yes", "restated", _ask(c.context, [condition], f"Is {named} {predicate}?", rng)),
              ("no", "negated", _ask(c.context, [condition], f"Can {named} fail to be {predicate}?", rng)),
              ("answers", "definition-question", _ask(c.context, [], asked, rng))]
    return drafts


def _weakened(c: _Claim, conclusions: list[str], rng: random.Random, premises: Sequence[str] = ()) -> list[Draft]:
    """The claim less a hypothesis (a ``Let``'s adjective, a condition) when it has two and the rest needs none."""
    adjectives = [(i, found) for i, sentence in enumerate(c.context) for found in _ADJECTIVE.finditer(sentence)]
    droppable = _removable(c, [*c.conditions, *premises], conclusions)
    if len(adjectives) + len(c.conditions) < 2 or not adjectives + droppable:
        return []
    choice = rng.randrange(len(adjectives) + len(droppable))
    context, conditions = list(c.context), [*c.conditions, *premises]
    if choice < len(adjectives):
        context[adjectives[choice][0]] = _without(context[adjectives[choice][0]], adjectives[choice][1], c.spans)
    else:
        del conditions[droppable[choice - len(adjectives)]]
    return [("related", "dropped-hypothesis", _ask(context, conditions, _forms(conclusions[0], c.spans)[0], rng))]


def _forms(clause: str, spans: Sequence[str] = ()) -> tuple[list[str], list[str], str]:
    """Question bodies asking whether ``clause`` holds, bodies asking whether it can fail (the statement answers them
    no), and the clause negated where its shape allows ("$M$ is not finite", "there is no ...") or else empty."""
    there, found, subject, formula = _THERE.match(clause), _CLAUSE.match(clause), _subject(clause), _formula(
        clause, spans)
    yes = [f"Is it true that {_lower(clause)}?", f"Does it follow that {_lower(clause)}?"]
    no, negation = [f"Is there a counterexample to the claim that {_lower(clause)}?"], ""
    if formula:
        negation = f"${formula[0]} {_RELATIONS[formula[1]][0]} {formula[2]}$"
    elif there:
        verb, rest = there["v"], re.sub(r"^(?:a|an|some)\s+", "", there["x"])
        opener = dict(exists="Does there exist", exist="Do there exist", are="Are there").get(verb, "Is there")
        yes, negation = [f"{opener} {there['x']}?"], f"there {'are' if verb in ('exist', 'are') else 'is'} no {rest}"
    elif found and subject and found["v"] in ("is", "are"):
        verb, rest, quantified = found["v"], found["p"], re.match(r"(?:every|any|each) (.+)", subject)
        yes += [f"{verb.capitalize()} {subject}{rest}?", f"Must {subject} be{rest}?"]
        no += [f"Is there {_article(quantified.group(1))} {quantified.group(1)} which is not{rest}?" if quantified
               else f"Can {subject} fail to be{rest}?"]
        negation = "" if quantified else f"{subject} {verb} not{rest}"
    elif found and subject:  # "$f$ has ..." to "Does $f$ have ...?" and "$f$ does not have ..."
        auxiliary, verb = ("does", found["v"].removesuffix("s")) if found["v"].endswith("s") else ("do", found["v"])
        verb = dict(ha="have", satisfie="satisfy", vanishe="vanish").get(verb, verb)
        yes.append(f"{auxiliary.capitalize()} {subject} {verb}{found['p']}?")
        negation = f"{subject} {auxiliary} not {verb}{found['p']}"
    negation = "" if found and not formula and _UNNEGATABLE.search(found["p"]) else negation
    return yes, no + [f"Is it true that {negation}?", f"Is it possible that {negation}?"] * bool(negation), negation


def _subject(clause: str) -> str:
    """The subject of a clause with a verb when it is short and names something, else empty."""
    found = _CLAUSE.match(clause)
    short = found and not _THERE.match(clause) and len(found["s"].split()) <= 8 and not _NOT_A_SUBJECT.match(found["s"])
    return _lower(found["s"]) if found and short and not _COMPOUND.search(found["p"]) else ""


def _formula(clause: str, spans: Sequence[str]) -> tuple[str, str, str] | None:
    """``(left, relation, right)`` when the clause is one formula with one top-level relation."""
    slot = _SLOT.fullmatch(clause.strip())
    math = _inline(spans[int(slot.group(1))]).strip("$") if slot and spans else ""
    depth = list(itertools.accumulate(((char in "{([") - (char in "})]") for char in math), initial=0))
    found = [relation for relation in _RELATION.finditer(math) if depth[relation.start()] == 0]
    if len(found) != 1 or depth[-1] != 0 or "&" in math:
        return None
    left, right = math[: found[0].start()].strip(), math[found[0].end() :].strip()
    return (left, found[0].group(0), right) if left and right else None


def _ask(context: Sequence[str], conditions: Sequence[str], bodies: str | Sequence[str], rng: random.Random) -> str:
    """The context sentences, then the conditions in one of three forms, then the question body (one of ``bodies``)."""
    body = bodies if isinstance(bodies, str) else rng.choice(bodies)
    if conditions:
        joined, form = " and ".join(map(_lower, conditions)), rng.randrange(3)
        body = (f"If {joined}, {body[0].lower()}{body[1:]}" if form == 0 else
                f"{'Suppose that' if form == 1 else 'Assume'} {joined}. {body}")
    return " ".join([*context, body])


def _finish(draft: str, spans: Sequence[str]) -> str:
    """The question with its math back (displays made inline), or empty when it is not fit to ask."""
    question = _SLOT.sub(lambda m: _inline(spans[int(m.group(1))]), draft)
    question = " ".join(question.replace(" ,", ",").replace("..", ".").split())
    question = question[:1].upper() + question[1:]
    fits = len(question) <= MAX_QUESTION_CHARS and len(question.split()) >= 4 and question.count("$") % 2 == 0 and (
        not re.search(r"xymatrix|\\begin\{|(?:[:;,]| that)\?$|\bLet\. ", question))
    return question if fits and question.endswith("?") else ""


def _inline(span: str) -> str:
    inner = re.sub(r"^(?:\$\$|\$|\\\[|\\\()|(?:\$\$|\$|\\\]|\\\))$", "", span.strip())
    return "${}$".format(" ".join(inner.split()).rstrip(" .,;"))


def _removable(c: _Claim, conditions: Sequence[str], conclusions: Sequence[str]) -> list[int]:
    """The conditions that declare nothing ("$g : Y \\to X$ is a morphism" does), their symbols all named elsewhere."""
    everything = [*c.context, *conditions, *conclusions]
    declared = [re.match(r"^⟪(\d+)⟫ (?:is|are) (?:a|an) ", condition) for condition in conditions]
    return [k for k, condition in enumerate(conditions) if _symbols(condition, c.spans) <= _symbols(
        " ".join(everything[: len(c.context) + k] + everything[len(c.context) + k + 1 :]), c.spans) and not (
        declared[k] and re.search(r":|\\to\b", c.spans[int(declared[k].group(1))]))]


def _without(sentence: str, adjective: re.Match[str], spans: Sequence[str]) -> str:
    """A ``Let`` sentence without one adjective, its article fitted to the next word."""
    before, after = sentence[: adjective.start()], sentence[adjective.end() :]
    if before.endswith((" and ", ", ")):  # "quasi-compact and quasi-separated", "finite type, quasi-coherent"
        before = before.removesuffix("and ").removesuffix(", ") + ("" if before.endswith(" and ") else " ")
    elif after.startswith("and "):
        after = after.removeprefix("and ")
    article = re.search(r"\b(?:a|an) $", before)
    if article and after.split():
        before = f"{before[: article.start()]}{_article(after.split()[0], spans)} "
    return before + after


def _article(word: str, spans: Sequence[str] = ()) -> str:
    """``a`` or ``an`` as the word, or the formula a slot stands for, is said ("an $R$-module", "a $k$-algebra")."""
    slot = _SLOT.match(word)
    if slot or word.startswith("$"):
        letters = re.sub(r"\\[a-zA-Z]+|[^a-zA-Z]", "", spans[int(slot.group(1))] if slot and spans else word)
        return "an" if letters[:1] and letters[0].lower() in "aefhilmnorsx" else "a"
    return "an" if word[:1].lower() in "aeiou" and not word.lower().startswith(("uni", "one", "eu", "use")) else "a"


def _symbols(text: str, spans: Sequence[str]) -> set[str]:
    """The one-letter symbols of the formulas in ``text`` (``\\mathcal{F}`` counts as one)."""
    math = re.sub(r"\\math\w+\{(\w)\}", r" \1' ", " ".join(spans[int(number)] for number in _SLOT.findall(text)))
    return set(re.findall(r"(?<![\\a-zA-Z])[a-zA-Z]'?(?![a-zA-Z])", math))


def _chosen(candidates: Mapping[str, list[tuple[str, str]]], rng: random.Random, n: int) -> list[tuple[str, ...]]:
    """Up to ``n`` candidates: one of each label in turn, the labels in a random order, each label's at random."""
    pools = [[(label, *one) for one in rng.sample(found, len(found))] for label, found in candidates.items() if found]
    rounds = itertools.zip_longest(*rng.sample(pools, len(pools)))
    return [candidate for round_ in rounds for candidate in round_ if candidate][:n]


def main(argv: Sequence[str] | None = None) -> None:
    """Read the development corpora, make their pairs, write them and print their counts."""
    from rag_app.datasets.dev_corpora import HOTT, STACKS, THESIS_SAMPLE, read_corpus
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=Path("../shared"), help="the folder holding corpora/")
    parser.add_argument("--out", type=Path, required=True, help="the JSON Lines file to write")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--per-statement", type=int, default=4)
    args = parser.parse_args(argv)
    read = [(r, Path(name).parts[1]) for name in (STACKS, HOTT, THESIS_SAMPLE) for r in read_corpus(args.shared, name)]
    records, corpus = [record for record, _ in read], {record.id: name for record, name in read}  # "stacks-project"
    pairs = make_pairs(records, random.Random(args.seed), args.per_statement, lambda r: corpus[r.id], True)
    write_pairs(pairs, args.out)
    print(f"{len(pairs)} pairs from {len(records)} statements written to {args.out}")
    for field in ("label", "kind", "corpus"):
        counts = Counter(getattr(pair, field) for pair in pairs)
        print(f"by {field}: " + ", ".join(f"{name} {count}" for name, count in counts.most_common()))


if __name__ == "__main__":
    main()
