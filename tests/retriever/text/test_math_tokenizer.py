from retriever.text.math_tokenizer import tokenize


def test_latex_commands_stay_whole_and_words_are_stemmed() -> None:
    tokens = tokenize(r"Noetherian rings satisfy $\frac{a}{b} \in \mathbb{Z}$ for 12 of them")
    assert "\\frac" in tokens and "\\mathbb" in tokens and "\\in" in tokens
    assert "ring" in tokens and "noetherian" in tokens
    assert "12" in tokens
    assert "for" not in tokens and "of" not in tokens
