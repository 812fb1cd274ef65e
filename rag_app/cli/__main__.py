"""``python -m rag_app.cli``: the same as the ``rag-app`` command."""

from rag_app.cli import main

main()
