"""Repairs of a written answer's form: a sentence repeated, and a last sentence cut off.

A small model can loop (one answer repeated a sentence pair five times) or stop mid-sentence when it
runs out of tokens, leaving a theorem cut before its conclusion. Repeats are kept once; an unfinished
last sentence is removed, since its missing end may be what makes it true.
"""

from __future__ import annotations

import re

from rag_app.answering.attribution import split_sentences
from rag_app.answering.citations import CITATION_PATTERN

_FINISHED = re.compile(r"[.!?:]\s*$|\$\$\s*$|\\\]\s*$")


def _key(sentence: str) -> str:
    return " ".join(CITATION_PATTERN.sub(" ", sentence).lower().split())


def is_finished(sentence: str) -> bool:
    """Ends as a sentence or a displayed formula does, with its inline formulas closed."""
    plain = CITATION_PATTERN.sub("", sentence).rstrip()
    if not plain:
        return True  # citations alone after the last full stop ("... one. [1]"): nothing was cut
    inline = plain.replace("$$", "").count("$")
    return bool(_FINISHED.search(plain)) and inline % 2 == 0


def repair(text: str) -> tuple[str, int, bool]:
    """``text`` with repeated sentences kept once and an unfinished last sentence removed; how many
    repeats were dropped, and whether the end was cut."""
    sentences = split_sentences(text)
    seen: set[str] = set()
    kept = []
    for sentence in sentences:
        key = _key(sentence)
        if key in seen:
            continue
        seen.add(key)
        kept.append(sentence)
    repeated = len(sentences) - len(kept)
    truncated = bool(kept) and not is_finished(kept[-1])
    if truncated:
        kept = kept[:-1]
    if not repeated and not truncated:
        return text, 0, False
    return " ".join(kept), repeated, truncated
