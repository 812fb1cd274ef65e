"""`rag-app serve`: the HTTP API on a real uvicorn server on loopback, over the demo index.

Answers use the real LLM server (llama.cpp with the smallest packaged model), or a server that accepts
connections and never answers (the queue, and the LLM down); everything else reads the demo index.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from typer.testing import CliRunner

from rag_app import MathRAG
from rag_app.api.connection_limits import uvicorn_options
from rag_app.api.guards import UnsafeBindError, check_bind, is_loopback
from rag_app.api.http_app import create_app
from rag_app.cli import app
from rag_app.serving.server_watch import WatchedServer
from rag_app.settings import ApiSettings
from tests.conftest import make_settings
from tests.llm_servers import HangingServer, ScriptedLLMServer

GALOIS = "galois-theory#cor:finitely-many-intermediate"


@contextmanager
def serving(rag: MathRAG, **limits: object) -> Iterator[str]:
    """``rag`` served by uvicorn on 127.0.0.1 (a free port) in a thread; yields the base URL."""
    settings = ApiSettings.model_validate(rag.settings.api.model_dump() | limits)
    # the options `rag-app serve` runs with: the h11 protocol with the limits at the connection (issue 85)
    options = uvicorn_options(settings)
    config = uvicorn.Config(create_app(rag, settings), host="127.0.0.1", port=0, log_level="warning", **options)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)


@pytest.fixture(scope="module")
def demo_api(demo_index_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MathRAG, str]]:
    rag = MathRAG(make_settings(tmp_path_factory.mktemp("api"), index_dir=demo_index_dir))
    with serving(rag) as url:
        yield rag, url


def test_search_papers_formula_and_statements_answer_in_the_clis_shapes(demo_api: tuple[MathRAG, str]) -> None:
    rag, url = demo_api
    with httpx.Client(base_url=url, timeout=60) as client:
        found = client.get("/v1/search", params={"query": "bounded entire function", "k": 3})
        assert found.status_code == 200, found.text
        expected = [hit.to_dict() for hit in rag.search("bounded entire function", 3)]
        assert [hit["id"] for hit in found.json()] == [hit["id"] for hit in expected]
        assert set(found.json()[0]) == set(expected[0])  # the fields of `search --json`, all of them
        posted = client.post("/v1/search", json={"query": "bounded entire function", "k": 3, "kind": ["theorem"]})
        assert posted.status_code == 200 and {hit["kind"] for hit in posted.json()} == {"theorem"}
        papers = client.post("/v1/papers", json={"query": "Galois extension", "k": 2}).json()
        assert papers[0]["paper_id"] == "galois-theory" and papers[0]["hits"]
        formula = client.get("/v1/formula", params={"formula": r"\sum_{n} a_n z^n", "k": 3})
        assert formula.status_code == 200 and len(formula.json()) <= 3
        # a label holds '#' and ':' (sent percent-encoded), as `rag-app show` takes it
        shown = client.get("/v1/statements/" + GALOIS.replace("#", "%23"))
        assert shown.status_code == 200, shown.text
        assert shown.json() == json.loads(json.dumps(rag.statement(GALOIS).to_dict()))
        quick, full = client.get("/v1/status").json(), client.get("/v1/status", params={"full": "true"}).json()
        assert quick["in_step"] is full["in_step"] is True
        assert (quick["compared"], full["compared"]) == ("counts", "ids")
        assert [store["statements"] for store in quick["stores"]] == [
            store["statements"] for store in full["stores"] if store["store"] != "vector index"
        ]
        assert client.get("/healthz").json()["ok"] is True
        openapi = client.get("/openapi.json").json()
        assert {"/v1/search", "/v1/ask", "/v1/ask/stream", "/v1/statements/{id_or_label}"} <= set(openapi["paths"])


BAD_REQUESTS = {
    "a 2 MB query in a body": ("POST", "/v1/search", {"json": {"query": "x" * 2_000_000}}, 413, "over the limit"),
    # issue 61, defect 15: sent chunked (no Content-Length), it was refused 400 "error parsing the body"
    "a 2 MB body sent chunked": (
        "POST", "/v1/search",
        {"content": [b'{"query": "' + b"x" * 1_000_000, b"x" * 1_000_000 + b'"}'],
         "headers": {"content-type": "application/json"}},
        413, "over the limit",
    ),
    "a query over the length limit": ("GET", "/v1/search", {"params": {"query": "x" * 3000}}, 400, "over the limit"),
    "k=-1": ("GET", "/v1/search", {"params": {"query": "ring", "k": -1}}, 400, "k must be between 1 and"),
    "k=10^9": ("POST", "/v1/search", {"json": {"query": "ring", "k": 10**9}}, 400, "k must be between 1 and"),
    "an unknown mode": ("GET", "/v1/search", {"params": {"query": "ring", "mode": "telepathy"}}, 400, "mode"),
    "malformed JSON": (
        "POST", "/v1/search", {"content": b'{"query": ', "headers": {"content-type": "application/json"}},
        400, "not valid JSON",
    ),
    "an unknown field": ("POST", "/v1/search", {"json": {"query": "ring", "kk": 3}}, 400, "kk"),
    "an empty question": ("POST", "/v1/ask", {"json": {"question": "  "}}, 400, "question is empty"),
    "an unknown statement": ("GET", "/v1/statements/lem:nowhere", {}, 404, "no statement has the id or label"),
    "a path traversal": ("GET", "/v1/statements/..%2F..%2F..%2Fetc%2Fpasswd", {}, 404, "no statement has"),
    "an unknown route": ("GET", "/v1/nothing", {}, 404, "no such route"),
}  # fmt: skip


def test_bad_requests_get_a_4xx_with_a_reason_and_the_server_stays_up(demo_api: tuple[MathRAG, str]) -> None:
    _, url = demo_api
    with httpx.Client(base_url=url, timeout=60) as client:
        for name, (method, path, kwargs, status, reason) in BAD_REQUESTS.items():
            response = client.request(method, path, **kwargs)
            assert response.status_code == status, (name, response.text[:300])
            error = response.json()["error"]
            assert error["status"] == status and reason in error["reason"], (name, error)
            assert "Traceback" not in response.text
        assert client.get("/healthz").status_code == 200


def test_every_response_says_how_long_the_server_spent_on_it(demo_api: tuple[MathRAG, str]) -> None:
    _, url = demo_api
    with httpx.Client(base_url=url, timeout=60) as client:
        for method, path, kwargs in [
            ("GET", "/v1/search", {"params": {"query": "bounded entire function", "k": 3}}),
            ("GET", "/v1/search", {"params": {"query": "ring", "k": -1}}),  # refused: timed all the same
            ("GET", "/healthz", {}),
        ]:
            begun = time.perf_counter()
            response = client.request(method, path, **kwargs)
            client_ms = (time.perf_counter() - begun) * 1000
            name, _, duration = response.headers["server-timing"].partition(";dur=")
            assert name == "app" and 0 < float(duration) <= client_ms, (path, response.headers["server-timing"])


def test_a_token_guards_every_route_but_the_health_check(demo_index_dir: Path, tmp_path: Path) -> None:
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir))
    with serving(rag, token="s3cret-token") as url, httpx.Client(base_url=url, timeout=60) as client:
        missing = client.get("/v1/search", params={"query": "ring"})
        assert missing.status_code == 401 and "bearer token is required" in missing.json()["error"]["reason"]
        assert missing.headers["www-authenticate"] == "Bearer"
        wrong = client.get("/v1/search", params={"query": "ring"}, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.json()["error"]["reason"] == "wrong token"
        assert client.post("/mcp", json={}).status_code == 401  # the MCP server too
        right = client.get("/v1/search", params={"query": "ring"}, headers={"Authorization": "Bearer s3cret-token"})
        assert right.status_code == 200
        assert client.get("/healthz").status_code == 200


def test_binding_beyond_loopback_needs_a_token(demo_index_dir: Path) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", "a-token")
    with pytest.raises(UnsafeBindError, match=r"refusing to listen on 0\.0\.0\.0 without a token"):
        check_bind("0.0.0.0", None)
    refused = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--index", str(demo_index_dir)])
    assert refused.exit_code == 2 and "RAG_APP_API__TOKEN" in refused.output


def test_answers_wait_their_turn_and_the_sources_come_back_when_the_llm_is_down(
    demo_index_dir: Path, tmp_path: Path
) -> None:
    hanging = HangingServer()
    settings = make_settings(tmp_path, index_dir=demo_index_dir)
    settings.llm.base_url, settings.llm.timeout_s, settings.llm.retries = hanging.url, 4.0, 0
    rag = MathRAG(settings)
    try:
        with serving(rag, max_concurrent_asks=1, max_queued_asks=0, retry_after_s=7) as url:
            first: dict[str, httpx.Response] = {}
            question = {"question": "Is every bounded entire function constant?"}
            asking = threading.Thread(target=lambda: first.update(answer=httpx.post(f"{url}/v1/ask", json=question,
                                                                                    timeout=120)))  # fmt: skip
            asking.start()
            with httpx.Client(base_url=url, timeout=10) as client:
                deadline = time.monotonic() + 60
                while client.get("/healthz").json()["asks_running"] == 0:
                    assert time.monotonic() < deadline, "the first answer never started"
                    time.sleep(0.05)
                started = time.perf_counter()
                assert client.get("/healthz").status_code == 200
                assert time.perf_counter() - started < 1.0, "the health check waits for nothing"
                busy = client.post("/v1/ask", json=question)
                assert busy.status_code == 429 and busy.headers["retry-after"] == "7"
                assert "retry later" in busy.json()["error"]["reason"]
            asking.join(120)
        down = first["answer"]
        assert down.status_code == 503, down.text[:300]
        assert down.json()["llm_error"] and down.json()["sources"], "the sources come back, as from `ask`"
    finally:
        hanging.close()


def test_an_answer_and_its_stream_from_the_real_llm(demo_rag: MathRAG) -> None:
    with serving(demo_rag) as url, httpx.Client(base_url=url, timeout=300) as client:
        question = {"question": "Which entire functions are bounded?", "k": 4}
        answer = client.post("/v1/ask", json=question)
        assert answer.status_code == 200, answer.text[:300]
        record = answer.json()
        assert {"answer", "sources", "status", "cited", "timings_ms"} <= set(record) and record["sources"]
        assert {"yes_no", "model_calls"} <= set(record)  # which model calls ran, and what each took
        calls = [call["purpose"] for call in record["model_calls"]]
        assert calls == ["answer"] if record["style"] == "synthesis" else calls in (["choice"], [])
        events = []
        with client.stream("POST", "/v1/ask/stream", json=question) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            name = None
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    name = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    events.append((name, json.loads(line.removeprefix("data: "))))
        names = [name for name, _ in events]
        assert names[0] == "sources" and names[-2:] == ["answer", "checks"]
        assert set(names) <= {"sources", "text", "answer", "checks"}
        answered, checks = events[-2][1], events[-1][1]
        assert {"answer", "status", "sources"} <= set(answered)
        assert checks["status"] == answered["status"] and "supported" in checks and "timings_ms" in checks
        # first what was found, at the end the sources the model read (those within the margin of the best)
        assert {s["id"] for s in answered["sources"]} <= {s["id"] for s in events[0][1]["sources"]}


def test_the_openapi_document_in_docs_is_the_one_served(tmp_path: Path) -> None:
    printed = CliRunner().invoke(app, ["serve", "--openapi", "--index", str(tmp_path / "no-index")])
    assert printed.exit_code == 0, printed.output
    checked_in = json.loads((Path(__file__).resolve().parents[3] / "docs" / "openapi.json").read_text())
    assert json.loads(printed.stdout) == checked_in, "regenerate: rag-app serve --openapi > docs/openapi.json"
    assert checked_in["paths"]["/v1/ask"]["post"]["summary"].startswith("The quoting answer")


def test_the_next_request_sees_what_another_writer_ingested(tmp_path: Path) -> None:
    from rag_app.pipeline import demo_corpus_path

    index_dir = tmp_path / "index"
    MathRAG(make_settings(tmp_path / "first", index_dir=index_dir)).ingest([demo_corpus_path() / "galois-theory"])
    rag = MathRAG(make_settings(tmp_path / "server", index_dir=index_dir))
    with serving(rag) as url, httpx.Client(base_url=url, timeout=60) as client:
        before = client.get("/v1/search", params={"query": "bounded entire function constant", "k": 3}).json()
        assert all(hit["paper_id"] == "galois-theory" for hit in before)
        # another writer (its own MathRAG, as another process would be) adds a paper meanwhile
        writer = MathRAG(make_settings(tmp_path / "writer", index_dir=index_dir))
        writer.ingest([demo_corpus_path() / "complex-analysis"])
        after = client.get("/v1/search", params={"query": "bounded entire function constant", "k": 3}).json()
        assert after[0]["paper_id"] == "complex-analysis", [hit["paper_id"] for hit in after]


def test_healthz_and_status_say_when_the_llm_server_died_and_why(demo_index_dir: Path, tmp_path: Path) -> None:
    """A local server that dies of SIGILL under a question: /healthz and /v1/status say so at once (in ms),
    and the next ask restarts it (here on its safe build) and is answered."""
    quote = {"style": "quote", "quote": {"ranker_sure_margin": None, "chooser": "none"}}  # the model always chooses
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir, answers=quote))
    watched = WatchedServer(ScriptedLLMServer(model_alias="scripted", log_path=tmp_path / "llm.log", fail="sigill",
                                              after=1, safe_fail="none"))  # fmt: skip
    rag.llm.watched = watched
    watched.start()
    try:
        with serving(rag) as url, httpx.Client(base_url=url, timeout=120) as client:
            assert client.get("/healthz").json()["llm"]["state"] == "up"
            question = {"question": "What does the Galois correspondence say?", "k": 3}
            down = client.post("/v1/ask", json=question)
            assert down.status_code == 503 and down.json()["sources"], down.text
            started = time.monotonic()
            health = client.get("/healthz").json()["llm"]
            assert time.monotonic() - started < 1
            assert health["state"] == "down" and "killed by SIGILL" in health["failure"]
            assert "killed by SIGILL" in client.get("/v1/status").json()["llm"]["failure"]
            again = client.post("/v1/ask", json=question)
            assert again.status_code == 200 and again.json()["llm_error"] is None, again.text
            assert client.get("/healthz").json()["llm"]["state"] == "up"
    finally:
        rag.close()


def sse_events(client: httpx.Client, path: str, body: dict[str, object]) -> list[tuple[str, dict]]:
    """The named events of a server-sent event stream, each with its data."""
    events, name = [], ""
    with client.stream("POST", path, json=body) as stream:
        for line in stream.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((name, json.loads(line.removeprefix("data: "))))
    return events


def test_the_stream_quotes_the_first_result_at_once_and_then_the_models_other_choice(
    demo_index_dir: Path, tmp_path: Path
) -> None:
    """Issue 75: the search's first result comes as the first text; the model's choice (here [2]) follows as a
    text event that says what changed, with the answer as it now stands for a client that redraws."""
    quote = {"style": "quote", "quote": {"ranker_sure_margin": None, "chooser": "none"}}  # the model always chooses
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir, answers=quote))
    watched = WatchedServer(ScriptedLLMServer(model_alias="scripted", log_path=tmp_path / "llm.log", reply="[2]"))
    rag.llm.watched = watched
    watched.start()
    try:
        with serving(rag) as url, httpx.Client(base_url=url, timeout=120) as client:
            question = {"question": "What does the Galois correspondence say?", "k": 3}
            events = sse_events(client, "/v1/ask/stream", question)
    finally:
        rag.close()
    names = [name for name, _ in events]
    assert names == ["sources", "text", "text", "answer", "checks"], names
    first, update, answered = events[1][1], events[2][1], events[3][1]
    assert first["text"].startswith("The search's first result, shown while the model reads the 3 statements found")
    assert "[1] " in first["text"] and "replace" not in first
    assert update["changed"] is True and "chose [2] instead of [1]" in update["notice"]
    assert update["text"].startswith("\n\n---\n\n" + update["notice"])  # appended after the first quote
    assert update["replace"] == answered["answer"] and answered["answer"].startswith(update["notice"])
    assert answered["cited"] == [2] and answered["shown_first"]["kept"] is False
    # Issue 76: the same search's next results come with the sources, before the first word, ranked after them.
    listed = events[0][1]["next_results"]
    assert listed and [hit["rank"] for hit in listed] == list(range(4, 4 + len(listed)))
    assert {"id", "kind", "text", "display_name", "uses_count"} <= set(listed[0])
    assert [hit["id"] for hit in answered["next_results"]][-len(listed) :] == [hit["id"] for hit in listed]
    assert answered["timings_ms"]["first_token"] < answered["timings_ms"]["full_answer"]


def test_a_page_that_rebinds_its_name_to_loopback_is_refused(demo_api: tuple[MathRAG, str]) -> None:
    """Issue 61, defect 6: with no token on loopback, `/v1/*` answered any Host (DNS rebinding)."""
    _, url = demo_api
    port = url.rsplit(":", 1)[1]
    with httpx.Client(base_url=url, timeout=60) as client:
        rebound = client.get("/v1/search", params={"query": "ring"}, headers={"Host": f"evil.example:{port}"})
        assert rebound.status_code == 403 and "does not name this machine" in rebound.json()["error"]["reason"]
        assert client.post("/v1/ask", json={"question": "x"}, headers={"Host": "evil.example"}).status_code == 403
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "LOCALHOST"):
            assert client.get("/v1/search", params={"query": "ring"}, headers={"Host": host}).status_code == 200
        assert client.get("/healthz", headers={"Host": "evil.example"}).status_code == 200  # probes carry any


def test_a_missing_reranker_is_a_503_that_names_the_command(demo_index_dir: Path, tmp_path: Path) -> None:
    """Issue 77, defect 1: `RerankerModelError` was missing from the map of known errors (HTTP 500 where the CLI
    exits 2 with the command that builds the model)."""
    rerank = {"search": True, "model": str(tmp_path / "no-reranker-here")}
    rag = MathRAG(make_settings(tmp_path, index_dir=demo_index_dir, rerank=rerank))
    with serving(rag) as url, httpx.Client(base_url=url, timeout=60) as client:
        response = client.get("/v1/search", params={"query": "Sylow subgroups", "k": 3})
    assert response.status_code == 503, response.text
    assert "rag-app train rerank" in response.json()["error"]["reason"]


def test_the_formula_search_takes_every_filter_the_cli_applies(demo_api: tuple[MathRAG, str]) -> None:
    """Issue 93: ``/v1/formula`` took ``source`` and ``kind`` only; a category or a date was refused as an
    unknown field, and the CLI's and the chat's filters could not be asked of it. The demo corpus is local
    LaTeX with no arXiv category: a category filter leaves nothing, and a date range that holds every paper
    leaves the same results as none."""
    _, url = demo_api
    formula = {"formula": r"\sum_{n} a_n z^n", "k": 3}
    with httpx.Client(base_url=url, timeout=60) as client:
        plain = client.post("/v1/formula", json=formula)
        assert plain.status_code == 200 and plain.json()
        by_category = client.post("/v1/formula", json=formula | {"category": ["math.NT"]})
        assert by_category.status_code == 200, by_category.text
        assert by_category.json() == []
        dated = client.get("/v1/formula", params=formula | {"date_to": "1900-01-01"})
        assert dated.status_code == 200, dated.text


def test_a_request_searches_the_text_its_check_read(demo_api: tuple[MathRAG, str]) -> None:
    """Issue 93: the check joined a surrogate pair (an emoji sent as CESU-8) and the request threw the joined text
    away: the unjoined one was counted and searched."""
    from rag_app.api.requests import FormulaRequest, SearchRequest

    rag, _ = demo_api
    pair = "\ud83d\ude00"  # one emoji, as two UTF-16 surrogates
    checked = SearchRequest(query=f"{pair} group", kind=[f"lemma{pair}"]).checked(rag.settings.api)
    assert checked.query == "\U0001f600 group" and checked.kind == ["lemma\U0001f600"]
    formula = FormulaRequest(formula=f"x^2 {pair}").checked(rag.settings.api)
    assert formula.formula == "x^2 \U0001f600"
