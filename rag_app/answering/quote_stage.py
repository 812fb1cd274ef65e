"""The lead-in and quotes stage of a quoting answer: what the reader is shown, from the choice and the verdict.

In: the :class:`Generation` so far (its sources, the source numbers picked, the verdict where one was read). Out: the
answer's text (the lead-in, then each picked statement quoted whole) and the generation with its quoted sentences.
The text says only what its sources state, word for word; what it decides is which to quote and the line above.
"""

from __future__ import annotations

from dataclasses import replace

from rag_app.answering.answer import AnswerUpdate
from rag_app.answering.quoted_answer import quote, quoted_answer
from rag_app.answering.stages import Generation, ShownFirst
from rag_app.answering.verdict import NOTHING_ANSWERS, AnswerVerdict


def verdict_quote(generation: Generation, unsure_quotes: int) -> tuple[str, Generation]:
    """The quote under the verdict's lead-in: the first of its order quoted as the answer, or where nothing answers,
    the closest ``unsure_quotes`` under "Nothing in the index answers this"."""
    read = generation.verdict
    assert read is not None
    if read.verdict is AnswerVerdict.NOT_FOUND:
        text, sentences = quoted_answer(generation.sources, read.order[:unsure_quotes])
        return f"{NOTHING_ANSWERS}\n\n{text}", replace(generation, picked=(), quoted=tuple(sentences))
    picked = read.order[:1]
    text, sentences = quoted_answer(generation.sources, picked)
    text = f"{read.lead_in}\n\n{text}" if read.lead_in else text
    return text, replace(generation, picked=picked, quoted=tuple(sentences))


def picked_quote(generation: Generation, unsure_quotes: int) -> tuple[str, Generation]:
    """The quote of ``generation``'s picks; with none picked, the closest under the notice that none was judged to
    answer (in the learned chooser's order, ``generation.choice_of``, where it read them)."""
    choice = generation.choice_of
    closest = choice.order if choice is not None else None
    text, sentences = quoted_answer(generation.sources, generation.picked, unsure_quotes, closest)
    return text, replace(generation, quoted=tuple(sentences))


def added_quote(
    generation: Generation, number: int, given: int, text: str, unsure_quotes: int
) -> tuple[AnswerUpdate, Generation]:
    """Source ``number`` added below the answer ``text`` (the model, reading the ``given`` statements found, points
    to it as well)."""
    added = replace(generation, picked=(*generation.picked, number))
    _, sentences = quoted_answer(added.sources, added.picked, unsure_quotes)
    notice = f"The model read the {given} statements found and points to [{number}] as well:"
    block = quote(added.sources[number - 1], number)
    update = AnswerUpdate(f"{text}\n\n{notice}\n\n{block}", f"\n\n{notice}\n\n{block}", False, notice)
    return update, replace(added, quoted=tuple(sentences))


def quoted_ids(generation: Generation) -> set[str]:
    """The statement ids ``generation`` quotes."""
    return {generation.sources[n - 1].record.id for n in generation.picked}


def update_after_shown_first(shown: ShownFirst, generation: Generation, text: str) -> AnswerUpdate:
    """What the model's choice makes of the statement shown first: the answer as it now stands, and what a reader
    who saw it is told (``changed``: the first quote is no longer the answer's first)."""
    given = len(generation.sources)
    read = f"The model read the {given} statements found" if given > 1 else "The model read the statement found"
    first = ", ".join(f"[{number}]" for number in shown.picked)
    picked = generation.picked
    if not picked:
        notice = f"{read} and judged that none of them answers the question; {first} was the search's first result."
        return AnswerUpdate(f"{notice}\n\n{text}", f"\n\n---\n\n{notice}\n\n{text}", True, notice, text)
    chosen = " and ".join(f"[{number}]" for number in picked)
    if picked[0] not in shown.picked:
        notice = f"{read} and chose {chosen} instead of {first}, the search's first result shown first."
        return AnswerUpdate(f"{notice}\n\n{text}", f"\n\n---\n\n{notice}\n\n{text}", True, notice, text)
    added = [number for number in picked if number not in shown.picked]
    if not added:
        notice = f"{read} and chose {first} as well."
        return AnswerUpdate(text, f"\n\n{notice}", False, notice)
    more = " and ".join(f"[{number}]" for number in added)
    notice = f"{read} and chose {chosen}: {more} added."
    added_quotes = "\n\n".join(quote(generation.sources[number - 1], number) for number in added)
    return AnswerUpdate(text, f"\n\n{notice}\n\n{added_quotes}", False, notice)
