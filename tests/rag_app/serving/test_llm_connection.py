"""The local server's warm-up reads the instructions the answers will use (units: a scripted client)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prompts import load_prompt
from rag_app.serving.llm_connection import LLMConnection
from tests.conftest import make_settings
from tests.rag_app.answering.test_conversation import ScriptedClient


@pytest.mark.parametrize(("style", "prompt"), [("quote", "answer_select@v1"), ("synthesis", "answer_with_citations")])
def test_the_warm_up_reads_the_system_prompt_of_the_answers_style(style: str, prompt: str, tmp_path: Path) -> None:
    # the quoting answer's prompt is pinned (answer_select@v1: the lean v2 and v3 are opt-in, issue 83)
    settings = make_settings(tmp_path, answers={"style": style})
    client = ScriptedClient("x")
    LLMConnection(settings)._warm_up(client)  # type: ignore[arg-type]
    expected = load_prompt(prompt).messages(sources="", question="", fence="")[0]
    assert client.messages[0][0] == expected
