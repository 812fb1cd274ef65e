"""`ingest arxiv --download` against a local HTTP server: listing, e-prints, politeness, retries."""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from pathlib import Path
from typing import ClassVar
from urllib.parse import parse_qs, urlparse

import pytest
from typer.testing import CliRunner

from ingestion.arxiv_download import ArxivDownloader
from rag_app.cli import app

PAGE = """<?xml version="1.0" encoding="UTF-8"?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><ListRecords>{records}{token}</ListRecords></OAI-PMH>"""
RECORD = """<record><header><identifier>oai:arXiv.org:{id}</identifier></header><metadata>
<arXiv xmlns="http://arxiv.org/OAI/arXiv/"><id>{id}</id><created>2023-01-0{day}</created>
<authors><author><keyname>Noether</keyname><forenames>Emmy</forenames></author></authors>
<title>Paper {id}</title><categories>math.AC math.AG</categories><abstract>About rings.</abstract></arXiv>
</metadata></record>"""
PAPER = (
    b"\\documentclass{amsart}\\newtheorem{lemma}{Lemma}\\begin{document}"
    b"\\begin{lemma} Every Noetherian ring $R$ has finitely many minimal primes. \\end{lemma}\\end{document}"
)


class ArxivStub(BaseHTTPRequestHandler):
    requests: ClassVar[list[tuple[float, str]]] = []
    failures_left: ClassVar[dict[str, int]] = {}
    late_arrivals: ClassVar[int] = 0  # the first requests reach the server this late (a slow network)

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        url = urlparse(self.path)
        if ArxivStub.late_arrivals > 0:
            ArxivStub.late_arrivals -= 1
            time.sleep(0.1)
        ArxivStub.requests.append((time.monotonic(), url.path))
        if url.path == "/oai":
            query = parse_qs(url.query)
            if "resumptionToken" in query:
                body = PAGE.format(records=RECORD.format(id="2301.00003", day=3), token="")
            else:
                assert query["set"] == ["math"] and query["from"] == ["2023-01-01"] and "until" not in query
                records = RECORD.format(id="2301.00001", day=1) + RECORD.format(id="2212.00077", day=2)
                body = PAGE.format(records=records, token="<resumptionToken>page2</resumptionToken>")
            self._send(200, body.encode(), "text/xml")
        elif url.path.startswith("/e-print/"):
            arxiv_id = url.path.rsplit("/", 1)[1]
            if ArxivStub.failures_left.get(arxiv_id, 0) > 0:
                ArxivStub.failures_left[arxiv_id] -= 1
                self._send(503, b"busy", "text/plain", {"Retry-After": "0"})
            else:
                self._send(200, gzip.compress(PAPER.replace(b"Noetherian", arxiv_id.encode())), "application/x-eprint")
        else:
            self._send(404, b"no", "text/plain")

    def _send(self, status: int, body: bytes, kind: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def arxiv_stub() -> Iterator[str]:
    ArxivStub.requests = []
    ArxivStub.failures_left = {"2301.00003": 1}
    ArxivStub.late_arrivals = 1
    server = ThreadingHTTPServer(("127.0.0.1", 0), ArxivStub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_download_lists_fetches_politely_and_resumes(arxiv_stub: str, tmp_path: Path) -> None:
    downloader = ArxivDownloader(f"{arxiv_stub}/oai", f"{arxiv_stub}/e-print/{{id}}", interval_s=0.2, retries=2)
    report = downloader.download_month("2023-01", tmp_path)
    assert (report.listed, report.downloaded, report.failed) == (2, 2, [])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["2301.00001", "2301.00003", "metadata.jsonl"]
    metadata = [json.loads(line) for line in (tmp_path / "metadata.jsonl").read_text().splitlines()]
    assert metadata[0]["categories"] == "math.AC math.AG" and metadata[0]["authors"] == "Emmy Noether"
    times = [t for t, _ in ArxivStub.requests]
    assert len(times) == 5  # two listing pages, three e-print requests (one 503 retried)
    # Spaced as the server sees them, though the first request arrived 0.1 s late.
    assert min(b - a for a, b in pairwise(times)) >= 0.2
    again = downloader.download_month("2023-01", tmp_path)
    assert (again.downloaded, again.already_present) == (0, 2)
    downloader.close()


@pytest.mark.slow
def test_ingest_arxiv_download_end_to_end(arxiv_stub: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_APP_ARXIV__OAI_URL", f"{arxiv_stub}/oai")
    monkeypatch.setenv("RAG_APP_ARXIV__EPRINT_URL", f"{arxiv_stub}/e-print/{{id}}")
    monkeypatch.setenv("RAG_APP_ARXIV__REQUEST_INTERVAL_S", "0")
    source = tmp_path / "month"
    result = CliRunner().invoke(
        app,
        [
            "ingest",
            "arxiv",
            "--month",
            "2023-01",
            "--source",
            str(source),
            "--download",
            "--index",
            str(tmp_path / "index"),
            "--json",
            "--workers",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["papers_ok"] == 2 and report["statements_by_kind"] == {"lemma": 2}
