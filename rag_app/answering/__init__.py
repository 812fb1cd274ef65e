"""Answers: the sources the model reads (context), the quoting answer (the default) and the written one,
with their checks (citations, attribution, statement check, text repair), the yes/no lead-in and
follow-up questions (conversation). ``answerer`` composes them; ``answer`` is the record it returns."""
