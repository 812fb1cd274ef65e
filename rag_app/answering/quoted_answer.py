"""The quoting answer (``answers.style = "quote"``): the model picks the sources that answer the
question, and the answer quotes those statements word for word, hypotheses included.

Read sentence by sentence, more than half of what the packaged 1.5B model wrote in its own words and
the checks passed was wrong (a dropped hypothesis, one inserted word, "and" for "or"). Pointing at
the statement that answers is within its reach; restating it is not. So what a quoting answer asserts
is exactly what its sources state, and the only decision left to the model is which sources to show.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from rag_app.answering.attribution import SentenceSupport
from retriever.types import SearchHit

NONE_STATED = "None of the statements found was judged to answer this question."
CLOSEST_ONE = "The closest one, quoted as it stands (read it before relying on it):"
CLOSEST_SEVERAL = "The {count} closest, quoted as they stand (read them before relying on any):"


def shown_first_heading(count: int) -> str:
    """The line above the search's first result while the model reads the sources (answers.quote.show_first)."""
    read = f"the {count} statements found" if count > 1 else "it"
    return f"The search's first result, shown while the model reads {read}:"


NO_SOURCES = "No statement could be given to the model, so none is quoted: the retrieved ones are listed below."
_NONE = re.compile(r"\bnone\b", re.IGNORECASE)
_NUMBER = re.compile(r"\d+")


def parse_selection(reply: str, sources: int, max_quotes: int) -> list[int]:
    """The source numbers the model picked, best first, within ``1..sources``, at most ``max_quotes``;
    empty for NONE or a reply without a valid number."""
    if _NONE.search(reply) and not _NUMBER.search(reply):
        return []
    picked = [int(n) for n in _NUMBER.findall(reply) if 1 <= int(n) <= sources]
    return list(dict.fromkeys(picked))[:max_quotes]


def choice_probabilities(tokens: Sequence[Mapping[str, float]], sources: int) -> dict[str, float]:
    """How sure the model was of its first pick: the probability it gave each source number (``"1"``..)
    and ``"none"`` as the start of its reply, normalized over those; empty when the server sent no log
    probabilities or the reply starts with neither.

    ``tokens``: for each token of the reply (temperature 0, so the likeliest was taken), its likeliest
    alternatives with their log probabilities. "[3]" is "[", "3", "]" in the tokenizers we serve: the
    first token says bracket, bare number or NONE; after a bracket, the second says which number.
    """
    if not tokens:
        return {}
    found: dict[str, float] = {}
    bracket = 0.0
    for token, logprob in tokens[0].items():
        text, p = token.strip(), math.exp(logprob)
        if text == "[":
            bracket += p
        elif (key := _source_key(text.lstrip("["), sources)) is not None:
            found[key] = found.get(key, 0.0) + p
    chosen = max(tokens[0], key=lambda token: tokens[0][token]).strip()
    if chosen == "[" and len(tokens) > 1:
        after = {key: math.exp(lp) for t, lp in tokens[1].items() if (key := _source_key(t.strip(), sources))}
        after.pop("none", None)
        total_after = sum(after.values())
        for key, p in after.items():
            found[key] = found.get(key, 0.0) + bracket * p / total_after
    total = sum(found.values())
    return {key: round(value / total, 4) for key, value in sorted(found.items())} if total else {}


def _source_key(text: str, sources: int) -> str | None:
    """``"3"`` for a source number within ``1..sources``, ``"none"`` for the start of NONE, else None."""
    if text.isdigit():
        return text if 1 <= int(text) <= sources else None
    if text and text[0] in "Nn" and "NONE".startswith(text.upper()):
        return "none"
    return None


def ranker_is_sure(hits: Sequence[SearchHit], margin: float | None) -> bool:
    """Whether the first hit's score leads the second's by at least ``margin`` (scores of the learned
    ranker: LambdaMART scores, whose differences mean the same for every question). A single hit is
    never "sure": there is nothing it was compared with."""
    return margin is not None and len(hits) > 1 and hits[0].score - hits[1].score >= margin


def quote(hit: SearchHit, number: int) -> str:
    """Source ``number`` as the answer shows it: its heading and paper title, then the whole statement
    as a Markdown block quote (never cut: a statement cut before its conclusion would mislead)."""
    record = hit.record
    lines = record.text.strip().splitlines()
    body = "\n".join(f"> {line}" if line.strip() else ">" for line in lines)
    return f"[{number}] {record.display_name}, in *{record.source_title}*:\n\n{body}"


def quoted_answer(
    hits: Sequence[SearchHit], selected: Sequence[int], unsure_quotes: int = 1, closest: Sequence[int] | None = None
) -> tuple[str, list[SentenceSupport]]:
    """The answer's text and one entry per quote (each stated by its source, verbatim). With no
    statement picked, the ``unsure_quotes`` closest are quoted under a notice saying so: the model often
    misjudges (12 of its 16 "none" replies in bench/answer_quality.py had the answering statement in front
    of it; in 4 of 5 wrong abstentions measured independently the answering statement was at rank 2-4).
    ``closest``: the source numbers in the order to quote them under the notice (the learned chooser's); unset,
    the search's order."""
    if not hits:
        return NO_SOURCES, []
    order = [n for n in closest if 1 <= n <= len(hits)] if closest else list(range(1, len(hits) + 1))
    numbers = list(selected) or order[: max(1, unsure_quotes)]
    blocks = [quote(hits[number - 1], number) for number in numbers]
    sentences = [
        SentenceSupport(block, [number], [], number, 1.0, True, True, stated=True)
        for block, number in zip(blocks, numbers, strict=True)
    ]
    text = "\n\n".join(blocks)
    if selected:
        return text, sentences
    closest = CLOSEST_ONE if len(numbers) == 1 else CLOSEST_SEVERAL.format(count=len(numbers))
    return f"{NONE_STATED} {closest}\n\n{text}", sentences
