"""Text as search reads it: the math-aware tokenizer, LaTeX rendered as Unicode, and notation typed in
ASCII or words read as LaTeX."""
