"""The real Streamlit app, driven with AppTest: each state a user meets and each control."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from ingestion.records import Source, StatementKind, StatementRecord
from rag_app import MathRAG, Settings
from rag_app.serving.llm_server import LLMServerProcess
from tests.conftest import make_settings
from tests.llm_servers import forced_output
from ui.latex_display import link_citations, to_streamlit_markdown

# Trains, starts a server or browser, or reads real corpora: out of the fast tier.
pytestmark = pytest.mark.slow

APP = str(Path(__file__).resolve().parents[2] / "ui" / "chat_app.py")
LIBRARY_PAGE = str(Path(__file__).resolve().parents[2] / "ui" / "library_page.py")
DOWN = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
QUESTION = "What is the spectral theorem for symmetric matrices?"
# The model's text is forced (constrained decoding) so that what the UI does with a cited formula is
# checked exactly; free generation is covered by tests/rag_app/test_llm_integration.py.
FORCED_ANSWER = r"A real symmetric matrix has an orthonormal basis of eigenvectors, $A = Q \Lambda Q^{T}$ [1]."


@pytest.fixture
def app_env(monkeypatch: pytest.MonkeyPatch, demo_index_dir: Path) -> pytest.MonkeyPatch:
    st.cache_resource.clear()
    st.cache_data.clear()
    monkeypatch.setenv("RAG_APP_INDEX_DIR", str(demo_index_dir))
    monkeypatch.setenv("RAG_APP_LLM__MAX_TOKENS", "40")
    monkeypatch.setenv("RAG_APP_LLM__RETRIES", "0")
    # These tests force written answers (citations linked, formulas for KaTeX); quoting has its own test.
    monkeypatch.setenv("RAG_APP_ANSWERS__STYLE", "synthesis")
    return monkeypatch


def forced(app_env: pytest.MonkeyPatch, server: LLMServerProcess, text: str = FORCED_ANSWER) -> None:
    app_env.setenv("RAG_APP_LLM__BASE_URL", server.base_url)
    app_env.setenv("RAG_APP_LLM__EXTRA_BODY", json.dumps(forced_output(text)))
    app_env.setenv("RAG_APP_LLM__MAX_TOKENS", "120")


def start(timeout: float = 120) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=timeout).run()
    assert not at.exception, at.exception
    return at


def ask(at: AppTest, question: str) -> AppTest:
    at.chat_input[0].set_value(question).run()
    assert not at.exception, at.exception
    return at


def markdown_of(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown]


def test_a_question_streams_an_answer_whose_citations_link_to_the_sources(
    app_env: pytest.MonkeyPatch, llm_server: LLMServerProcess
) -> None:
    forced(app_env, llm_server)
    at = ask(start(), QUESTION)
    assert at.title[0].value == "Ask mathematics"
    answer_markdown = [m.value for m in at.chat_message[1].markdown]
    linked = [text for text in answer_markdown if "(#src-0-1)" in text]
    assert linked and "$A = Q \\Lambda Q^{T}$" in linked[0]  # the formula is left for KaTeX
    assert '<div id="src-0-1"></div>' in answer_markdown  # the anchor the link points at
    headings = [text for text in answer_markdown if text.startswith("**[1]")]
    assert headings and "Theorem" in headings[0] and "(Spectral theorem)" in headings[0]
    assert not any("score" in text for text in answer_markdown), "raw ranker scores are not shown to people"
    assert any("Linear algebra" in c.value or "linear" in c.value.lower() for c in at.caption), "the paper is named"
    history = at.session_state["history"]
    assert history[0].cited == [1] and history[0].retriever == "hybrid-formula"
    assert any(c.value.endswith("answer_with_citations@v4") for c in at.caption), "elapsed time, model and prompt"
    assert any(": answer " in c.value for c in at.caption), "the model call that wrote the answer, and its time"


def test_a_quoting_answer_shows_the_chosen_statement_whole_under_its_title(
    app_env: pytest.MonkeyPatch, llm_server: LLMServerProcess
) -> None:
    forced(app_env, llm_server, "[1]")
    app_env.setenv("RAG_APP_ANSWERS__STYLE", "quote")
    at = ask(start(), QUESTION)
    answer = at.session_state["history"][0]
    assert answer.style == "quote" and answer.cited == [1] and answer.prompt == "answer_select@v1"
    record = answer.sources[0].record
    shown = "\n".join(m.value for m in at.chat_message[1].markdown)
    assert f"{record.display_name}, in *" in shown and record.text.split()[2] in shown
    assert not any("not stated" in c.value for c in at.chat_message[1].caption)
    # the quoted statement is not repeated as a source card: its card says it is quoted above
    card = [m.value for m in at.chat_message[1].markdown if m.value.startswith("**[1]")]
    assert card and card[0].endswith("quoted above")
    assert shown.count(record.text.split("\n")[0].strip()[:40]) == 1


def test_a_statement_the_ranker_chose_says_so_under_the_answer(
    app_env: pytest.MonkeyPatch, llm_server: LLMServerProcess
) -> None:
    forced(app_env, llm_server, "[2]")  # the model would pick [2]; it is not asked
    app_env.setenv("RAG_APP_ANSWERS__STYLE", "quote")
    app_env.setenv("RAG_APP_ANSWERS__QUOTE__RANKER_SURE_MARGIN", "0")  # any lead is clear enough
    app_env.setenv("RAG_APP_ANSWERS__QUOTE__CHOOSER", "none")  # the model's way (before issue 92)
    at = ask(start(), QUESTION)
    answer = at.session_state["history"][0]
    assert answer.chosen_by == "ranker" and answer.cited == [1] and answer.raw_text == ""
    captions = [c.value for c in at.chat_message[1].caption]
    assert any("quoted without asking the language model" in c for c in captions)
    assert not any("confidence" in c for c in captions)
    assert any(" · no model call · " in c.value for c in at.caption), "no model call was made, and it says so"


def test_the_first_result_shown_while_the_model_chose_another_is_replaced_with_a_notice(
    app_env: pytest.MonkeyPatch, llm_server: LLMServerProcess
) -> None:
    """Issue 75: the search's first result is shown at once; the model's other choice replaces it, saying so."""
    forced(app_env, llm_server, "[2]")
    app_env.setenv("RAG_APP_ANSWERS__STYLE", "quote")
    app_env.setenv("RAG_APP_ANSWERS__QUOTE__RANKER_SURE_MARGIN", "none")  # the model always chooses
    app_env.setenv("RAG_APP_ANSWERS__QUOTE__CHOOSER", "none")  # the model's way (before issue 92)
    at = ask(start(), QUESTION)
    answer = at.session_state["history"][0]
    assert answer.chosen_by == "model" and answer.cited == [2]
    assert answer.generation.shown_first is not None and answer.generation.shown_first.kept is False
    shown = " ".join(m.value for m in at.chat_message[1].markdown)
    # the numbers link to their source cards
    assert "chose [\\[2\\]](#src-0-2) instead of [\\[1\\]](#src-0-1), the search's first result shown first" in shown
    assert "shown while the model reads" not in shown, "the first quote's heading is gone once the model chose"
    assert any(c.value.startswith("first words at ") for c in at.caption), "when the first words came, and the rest"


def test_a_follow_up_is_searched_with_the_conversation(
    app_env: pytest.MonkeyPatch, llm_server: LLMServerProcess
) -> None:
    forced(app_env, llm_server)
    at = ask(ask(start(), QUESTION), "Does it also hold for complex matrices?")
    history = at.session_state["history"]
    assert len(history) == 2 and len(at.chat_message) == 4
    follow_up = history[1]
    assert follow_up.search_query != follow_up.question and "spectral" in follow_up.search_query.lower()
    assert any(c.value.startswith("searched for: ") for c in at.chat_message[3].caption)
    assert any("(#src-1-1)" in m.value for m in at.chat_message[3].markdown), "anchors are per answer"
    at.sidebar.button[0].click().run()  # "New conversation"
    assert not at.session_state["history"] and len(at.chat_message) == 0


def test_sidebar_controls_reach_the_search(app_env: pytest.MonkeyPatch) -> None:
    app_env.setenv("RAG_APP_LLM__BASE_URL", DOWN)
    at = start()
    assert at.sidebar.multiselect(key="sources").options == ["arXiv", "Math StackExchange", "local"]
    at.sidebar.multiselect(key="kinds").select("definition")
    at.sidebar.selectbox(key="mode").select("dense")
    at.sidebar.slider(key="top_k").set_value(3)
    at = ask(at.run(), "What is a group?")
    answer = at.session_state["history"][0]
    assert answer.retriever == "dense" and len(answer.sources) == 3
    assert {hit.record.kind for hit in answer.sources} == {StatementKind.DEFINITION}
    assert answer.filter == "kind: definition"
    assert any(c.value == "filter: kind: definition" for c in at.caption)
    at.sidebar.multiselect(key="sources").select("mse")  # the demo corpus is local: nothing passes
    at = ask(at.run(), "What is a group?")
    assert not at.session_state["history"][1].sources
    assert any("holds no statement" in i.value for i in at.info)


def test_llm_down_shows_a_banner_and_still_lists_the_sources(app_env: pytest.MonkeyPatch) -> None:
    app_env.setenv("RAG_APP_LLM__BASE_URL", DOWN)
    at = start()
    assert "language model is not available" in at.warning[0].value  # before any question
    assert any(c.value.startswith("🔴 LLM:") for c in at.sidebar.caption)
    at = ask(at, "Fundamental theorem of Galois theory")
    assert any("not available" in w.value for w in at.chat_message[1].warning)
    assert any("Fundamental theorem of Galois theory" in m for m in markdown_of(at))


def test_a_question_the_corpus_cannot_answer_says_so_and_shows_the_closest(app_env: pytest.MonkeyPatch) -> None:
    app_env.setenv("RAG_APP_LLM__BASE_URL", DOWN)  # never asked: nothing is generated
    at = ask(start(), "What is the best recipe for sourdough bread?")
    assert "does not seem to contain" in at.chat_message[1].info[0].value
    assert any(m.startswith("**[1]") for m in markdown_of(at)), "the closest statements are listed"


def test_empty_index_explains_how_to_ingest_and_loads_the_demo_in_one_click(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    st.cache_resource.clear()
    st.cache_data.clear()
    monkeypatch.setenv("RAG_APP_INDEX_DIR", str(tmp_path / "empty-index"))
    monkeypatch.setenv("RAG_APP_INGESTION__ISOLATE_PAPERS", "false")
    at = start(timeout=300)
    assert "index is empty" in at.info[0].value
    at.button[0].click().run()
    assert not at.exception
    assert "statements" in at.success[0].value, "the ingest report is shown"
    assert at.chat_input, "the chat replaces the offer"
    assert MathRAG.open(tmp_path / "empty-index").index.count() > 100


def test_an_index_that_cannot_be_opened_is_a_message_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    st.cache_resource.clear()
    not_a_directory = tmp_path / "index"
    not_a_directory.write_text("oops")
    monkeypatch.setenv("RAG_APP_INDEX_DIR", str(not_a_directory))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert "could not be opened" in at.error[0].value


def test_formula_search_renders_the_formula_and_finds_its_statement(app_env: pytest.MonkeyPatch) -> None:
    app_env.setenv("RAG_APP_LLM__BASE_URL", DOWN)
    at = start()
    at.text_input(key="formula").set_value(r"$\tfrac1{n+1}\dbinom{2n}n$").run()
    assert not at.exception
    assert r"\tfrac1{n+1}\dbinom{2n}n" in at.latex[0].value  # st.latex wraps it in $$
    assert any("Catalan" in m for m in markdown_of(at) if m.startswith("**"))


def test_find_papers_lists_papers_with_their_best_statements(app_env: pytest.MonkeyPatch) -> None:
    app_env.setenv("RAG_APP_LLM__BASE_URL", DOWN)
    at = start()
    at.text_input(key="paper_query").set_value("Sylow subgroups are conjugate").run()
    assert not at.exception
    shown = markdown_of(at)
    papers = [m for m in shown if m.startswith(("**1. ", "**2. "))]
    assert len(papers) == 2, shown
    assert any(m.startswith("*Theorem") and "Sylow" in m for m in shown), shown  # its best statements under it
    assert "finite-groups" in next(c.value for c in at.caption if "finite-groups" in c.value)
    # A filter that leaves nothing: a message, not an error.
    at.sidebar.multiselect(key="sources").set_value(["mse"]).run()
    assert not at.exception and any("No paper matches" in i.value for i in at.info)


def test_the_library_page_shows_what_is_indexed(app_env: pytest.MonkeyPatch, demo_index_dir: Path) -> None:
    app_env.setenv("RAG_APP_LLM__BASE_URL", DOWN)
    at = start().switch_page(LIBRARY_PAGE).run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Library"
    metrics = {m.label: m.value for m in at.metric}
    count = MathRAG.open(demo_index_dir).index.count()
    assert metrics["Statements"] == f"{count:,}" and metrics["Last ingest"] != "never"
    tables = [t.value for t in at.dataframe]
    assert any("local" in list(table.get("source", [])) for table in tables)
    models = next(table for table in tables if "version" in table.columns)
    versions = " ".join(map(str, models["version"]))
    assert "packaged:all-MiniLM-L6-v2" in versions and "answer_with_citations@v" in versions
    assert "Add LaTeX sources" in [h.value for h in at.subheader]


# ------------------------------------------------------------------ arXiv sources: categories, dates, BibTeX
def arxiv_record(
    arxiv_id: str, kind: StatementKind, name: str, text: str, category: str, published: str
) -> StatementRecord:
    return StatementRecord(
        id=f"{arxiv_id}-{name}",
        source=Source.ARXIV,
        kind=kind,
        text=text,
        paper_id=arxiv_id,
        name=name,
        url=f"https://arxiv.org/abs/{arxiv_id}",
        title=f"A paper on {name.lower()}",
        metadata={
            "categories": f"{category} math.GM",
            "primary_category": category,
            "published": published,
            "authors": "Ada Lovelace; Emmy Noether",
            "number": "2.1",
        },
    )


@pytest.fixture(scope="module")
def arxiv_index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("arxiv-ui")
    rag = MathRAG(make_settings(base))
    rag.index.add(
        [
            arxiv_record(
                "2401.00001",
                StatementKind.THEOREM,
                "Hilbert basis theorem",
                r"If $R$ is Noetherian then so is $R[x]$.",
                "math.AC",
                "2024-01-02",
            ),
            arxiv_record(
                "2401.00001",
                StatementKind.DEFINITION,
                "Noetherian ring",
                "A ring is Noetherian if every ascending chain of ideals stabilizes.",
                "math.AC",
                "2024-01-02",
            ),
            arxiv_record(
                "2306.00002",
                StatementKind.THEOREM,
                "Dirichlet theorem on primes",
                r"There are infinitely many primes $p \equiv a \pmod q$ when $\gcd(a, q) = 1$.",
                "math.NT",
                "2023-06-15",
            ),
            arxiv_record(
                "2306.00002",
                StatementKind.LEMMA,
                "Orthogonality of characters",
                r"$\sum_{\chi} \chi(a) = \varphi(q)$ if $a \equiv 1$, else $0$.",
                "math.NT",
                "2023-06-15",
            ),
        ]
    )
    rag.index.rebuild_lexical()
    return base / "index"


def test_category_and_date_filters_and_bibtex_export(monkeypatch: pytest.MonkeyPatch, arxiv_index_dir: Path) -> None:
    st.cache_resource.clear()
    st.cache_data.clear()
    monkeypatch.setenv("RAG_APP_INDEX_DIR", str(arxiv_index_dir))
    monkeypatch.setenv("RAG_APP_LLM__BASE_URL", DOWN)
    monkeypatch.setenv("RAG_APP_LLM__RETRIES", "0")
    monkeypatch.setenv("RAG_APP_ANSWERS__MIN_RELEVANCE", "-1")
    at = start()
    categories = at.sidebar.multiselect(key="categories")
    assert set(categories.options) == {"math.AC", "math.NT", "math.GM"}
    assert at.sidebar.date_input(key="dates").value == (date(2023, 6, 15), date(2024, 1, 2))
    categories.select("math.NT")
    at = ask(at.run(), "primes in arithmetic progressions")
    assert {hit.record.paper_id for hit in at.session_state["history"][0].sources} == {"2306.00002"}
    at.sidebar.multiselect(key="categories").unselect("math.NT")
    at.sidebar.date_input(key="dates").set_value((date(2024, 1, 1), date(2024, 1, 2)))
    at = ask(at.run(), "primes in arithmetic progressions")
    second = at.session_state["history"][1]
    assert {hit.record.paper_id for hit in second.sources} == {"2401.00001"}
    assert second.filter == "date: 2024-01-01 to …"
    codes = [c.value for c in at.code]
    bibtex = [c for c in codes if c.startswith("@misc{arxiv:")]
    assert bibtex and "eprint = {2401.00001}" in bibtex[-1] and "Ada Lovelace and Emmy Noether" in bibtex[-1]
    markdown = [c for c in codes if "**References**" in c]
    assert markdown and "**Q:** primes in arithmetic progressions" in markdown[-1]
    assert "A paper on hilbert basis theorem — Ada Lovelace, Emmy Noether — arXiv:2401.00001" in markdown[-1]
    assert any("[arXiv](https://arxiv.org/abs/2401.00001)" in c.value for c in at.caption)


def test_latex_delimiters_are_converted_but_code_is_not() -> None:
    text = r"Since \(x^2 \ge 0\) we get \[a = b\] and `\(keep\)`."
    converted = to_streamlit_markdown(text)
    assert "$x^2 \\ge 0$" in converted and "\n$$\na = b\n$$\n" in converted
    assert "`\\(keep\\)`" in converted
    aligned = to_streamlit_markdown(r"\begin{align}x &= 1 \label{e}\end{align}")
    assert "\\begin{aligned}x &= 1 \\end{aligned}" in aligned


def test_citations_become_links_outside_math_and_code_only() -> None:
    text = to_streamlit_markdown(r"By [1] and [2][3], \(x[1]\) holds [9]; `a[1]`.")
    linked = link_citations(text, "src-0", 3)
    assert "By [\\[1\\]](#src-0-1) and [\\[2\\]](#src-0-2)[\\[3\\]](#src-0-3)" in linked
    assert "$x[1]$" in linked and "[9]" in linked and "`a[1]`" in linked


def test_a_source_shows_what_it_uses_and_what_uses_it_and_opens_them(app_env: pytest.MonkeyPatch) -> None:
    app_env.setenv("RAG_APP_LLM__BASE_URL", DOWN)  # the sources alone
    at = ask(start(), "Is a bounded entire function constant?")
    answer = at.session_state["history"][0]
    number = next(n for n, hit in enumerate(answer.sources, 1) if hit.record.label == "thm:liouville")
    assert "Uses 1 · Used by 1" in [e.label for e in at.chat_message[1].expander]
    buttons = at.chat_message[1].button
    opener = next(b for b in buttons if b.label.startswith("Corollary (Fundamental theorem of algebra)"))
    assert opener.key == f"src-0-{number}-used-by-0"
    # how it is cited: the corollary's sentence, with a button opening the corollary
    assert "**How it is cited** (1 citing sentences)" in [m.value for m in at.chat_message[1].markdown]
    assert any(m.value.startswith("> If $p$ had no root") for m in at.chat_message[1].markdown)
    assert any(b.key == f"src-0-{number}-cited-as-0" for b in buttons)
    at = opener.click().run()
    assert not at.exception, at.exception
    fta = MathRAG(Settings.load()).statement("complex-analysis#cor:fta").record
    assert at.session_state["open_statement"] == fta.id
    heading = "**Corollary (Fundamental theorem of algebra)**"
    opened = [m.value for m in at.main.markdown if m.value.startswith(heading)]
    assert opened and "complex-analysis#cor:fta" in opened[0]
    assert any("Every non-constant polynomial" in m.value for m in at.main.markdown)
    at = next(b for b in at.main.button if b.key == "close-opened").click().run()
    assert "open_statement" not in at.session_state


def test_a_quoted_statement_lists_the_definitions_it_relies_on(
    app_env: pytest.MonkeyPatch, llm_server: LLMServerProcess
) -> None:
    forced(app_env, llm_server, "[1]")
    app_env.setenv("RAG_APP_ANSWERS__STYLE", "quote")
    at = ask(start(), "Does a finite separable extension have only finitely many intermediate fields?")
    answer = at.session_state["history"][0]
    assert answer.sources[0].record.label == "cor:finitely-many-intermediate" and answer.cited == [1]
    assert "Definitions it relies on:" in [c.value for c in at.chat_message[1].caption]
    definition = next(b for b in at.chat_message[1].button if b.key == "src-0-quoted-1-definition-0")
    assert definition.label.startswith("Definition (Normal and separable)")


SEARCH_PAGE = str(Path(__file__).resolve().parents[2] / "ui" / "search_page.py")


def test_under_an_answer_the_next_results_are_listed_one_line_each_and_open(app_env: pytest.MonkeyPatch) -> None:
    app_env.setenv("RAG_APP_LLM__BASE_URL", DOWN)  # the sources and the list come from the search alone
    at = ask(start(), "Is a bounded entire function constant?")
    answer = at.session_state["history"][0]
    listed = answer.next_results
    assert len(listed) >= 20, "the demo corpus has more than enough statements for twenty"
    assert [hit.rank for hit in listed[:3]] == sorted(hit.rank for hit in listed[:3])
    assert not {hit.record.id for hit in listed} & {hit.record.id for hit in answer.sources}
    assert "**Next results**" in markdown_of(at)
    lines = [e for e in at.chat_message[1].expander if e.key and e.key.startswith("next-0-")]
    assert len(lines) == 20, "twenty at first"
    first = listed[0]
    assert lines[0].label.startswith(f"{first.rank}. **") and " — " in lines[0].label
    assert not any(first.record.text[:30] in m.value for m in at.chat_message[1].markdown), "closed: not drawn"
    # More on request, without a new search: the same answer's list, longer.
    more = next(b for b in at.chat_message[1].button if b.key == "next-0-more")
    at = more.click().run()
    assert not at.exception, at.exception
    assert at.session_state["history"][0] is answer
    assert len([e for e in at.chat_message[1].expander if e.key and e.key.startswith("next-0-")]) > 20


def test_a_listed_result_opens_to_its_statement_and_asking_about_it_fills_the_chat_input(
    app_env: pytest.MonkeyPatch,
) -> None:
    app_env.setenv("RAG_APP_LLM__BASE_URL", DOWN)
    at = ask(start(), "Is a bounded entire function constant?")
    hit = at.session_state["history"][0].next_results[0]
    key = f"next-0-{hit.rank}"
    at.session_state[key] = True  # what a click on the line does: the expander's state, then a rerun
    at.run()
    assert not at.exception, at.exception
    assert any(hit.record.text[:25] in m.value for m in at.chat_message[1].markdown), "opened: the whole statement"
    quote = next(c.value for c in at.chat_message[1].code if c.language == "markdown")
    assert quote.startswith("> **") and hit.record.text.split()[0] in quote  # "Quote it"
    at = next(b for b in at.chat_message[1].button if b.key == f"{key}-ask").click().run()
    assert not at.exception, at.exception
    question = at.chat_input[0].value
    assert question.startswith("What does ") and hit.record.paper_id in question, question


def test_the_search_page_lists_results_with_the_sidebar_filters_and_as_json(app_env: pytest.MonkeyPatch) -> None:
    app_env.setenv("RAG_APP_LLM__BASE_URL", DOWN)
    at = AppTest.from_file(SEARCH_PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Search"
    at.text_input(key="search_query").set_value("Sylow subgroups are conjugate").run()
    assert not at.exception, at.exception
    lines = [e for e in at.main.expander if e.key and e.key.startswith("search-")]
    assert len(lines) == 20 and "Sylow" in lines[0].label
    expected = MathRAG(Settings.load()).search("Sylow subgroups are conjugate", 50)
    shown = json.loads(next(c.value for c in at.code if c.language == "json"))
    assert [hit["id"] for hit in shown] == [hit.record.id for hit in expected], "the same list as search --json"
    # A filter from the sidebar: definitions only.
    at.sidebar.multiselect(key="kinds").set_value(["definition"]).run()
    assert not at.exception, at.exception
    shown = json.loads(next(c.value for c in at.code if c.language == "json"))
    assert shown and {hit["kind"] for hit in shown} == {"definition"}
    assert any("filter:" in c.value for c in at.caption)
    # Papers instead of statements.
    at.sidebar.multiselect(key="kinds").set_value([]).run()
    at.radio(key="search_rank").set_value("papers").run()
    assert not at.exception, at.exception
    assert any(m.value.startswith("**1. ") for m in at.markdown)


def test_an_earlier_answers_next_results_wait_behind_a_toggle(app_env: pytest.MonkeyPatch) -> None:
    app_env.setenv("RAG_APP_LLM__BASE_URL", DOWN)
    at = ask(ask(start(), "Is a bounded entire function constant?"), "Sylow subgroups are conjugate")
    at.run()  # the page as it stands after the second answer
    assert not at.exception, at.exception

    def lines(turn: int) -> list:
        return [e for e in at.main.expander if e.key and e.key.startswith(f"next-{turn}-")]

    assert not lines(0) and len(lines(1)) == 20, "only the latest answer draws its lines"
    at.toggle(key="next-0-shown").set_value(True).run()
    assert not at.exception, at.exception
    assert len(lines(0)) == 20
