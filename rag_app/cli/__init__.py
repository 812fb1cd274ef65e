"""The ``rag-app`` command line: ingest, search, ask, eval, ui, llm serve, train, and the index commands.

One module per command family (``ingest``, ``search``, ``index``, ``serve``, ``evaluate``, ``train``);
``common`` holds the app, the shared options and the map from known errors to exit codes. Command names,
flags and JSON fields here are contracts that scripts rely on: add, don't rename.
"""

# Each module registers its commands; imported in the order `rag-app --help` lists them.
# isort: off
from rag_app.cli import ingest, search, show, index, serve, api, evaluate, train  # noqa: F401

# isort: on
from rag_app.cli.common import EXIT_DAMAGED, EXIT_REFUSED, EXIT_USAGE, app

__all__ = ["EXIT_DAMAGED", "EXIT_REFUSED", "EXIT_USAGE", "app", "main"]


def main() -> None:
    app()
