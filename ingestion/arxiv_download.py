"""Fetching one month of arXiv politely: the listing over OAI-PMH, then each paper's e-print.

Each request waits the configured interval after the last response (arXiv asks for one request
every three seconds, as its servers see them), retried
with exponential backoff on connection errors, timeouts, 429 and 5xx (honouring ``Retry-After``),
and never repeated for files already on disk, so an interrupted download resumes. The listing is
written as ``metadata.jsonl`` in the snapshot's layout, which ``--metadata`` reads.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
from defusedxml import ElementTree
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from ingestion.arxiv_month_sources import id_in_month, month_prefix
from ingestion.contained_paths import contained_path
from ingestion.latex_sources import safe_paper_dir_name

_OAI = "{http://www.openarchives.org/OAI/2.0/}"
_ARXIV = "{http://arxiv.org/OAI/arXiv/}"


class DownloadError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class DownloadReport:
    listed: int
    downloaded: int
    already_present: int
    failed: list[tuple[str, str]]
    seconds: float


def _retryable(error: BaseException) -> bool:
    if isinstance(error, httpx.TransportError):
        return True
    if isinstance(error, httpx.HTTPStatusError):
        return error.response.status_code == 429 or error.response.status_code >= 500
    return False


class ArxivDownloader:
    def __init__(
        self,
        oai_url: str,
        eprint_url: str,
        set_spec: str = "math",
        interval_s: float = 3.0,
        timeout_s: float = 60.0,
        retries: int = 4,
        user_agent: str = "rag-app",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.oai_url = oai_url
        self.eprint_url = eprint_url
        self.set_spec = set_spec
        self.interval_s = interval_s
        self.retries = retries
        self.sleep = sleep
        self._client = httpx.Client(timeout=timeout_s, headers={"User-Agent": user_agent}, follow_redirects=True)
        self._last_request = 0.0

    def close(self) -> None:
        self._client.close()

    # ------------------------------------------------------------------ HTTP
    def _get(self, url: str, params: dict[str, str] | None = None) -> httpx.Response:
        for attempt in Retrying(
            retry=retry_if_exception(_retryable),
            stop=stop_after_attempt(self.retries + 1),
            wait=wait_exponential_jitter(initial=max(self.interval_s, 0.1), max=60),
            sleep=self.sleep,
            reraise=True,
        ):
            with attempt:
                wait = self._last_request + self.interval_s - time.monotonic()
                if wait > 0:
                    self.sleep(wait)
                try:
                    response = self._client.get(url, params=params)
                finally:
                    # The interval runs from the end of the last exchange, not its start: the server
                    # then sees at least the interval between two requests, however late one arrived.
                    self._last_request = time.monotonic()
                if response.status_code in (429, 503) and "Retry-After" in response.headers:
                    with contextlib.suppress(ValueError):
                        self.sleep(min(float(response.headers["Retry-After"]), 300.0))
                response.raise_for_status()
                return response
        raise DownloadError(f"no response from {url}")  # unreachable: tenacity reraises

    # ------------------------------------------------------------------ listing
    def list_month(self, month: str) -> Iterator[dict[str, object]]:
        """Snapshot-style metadata of the month's papers in the configured set."""
        prefix = month_prefix(month)
        # OAI-PMH selects by datestamp, the date of the last change: a paper of this month revised
        # later carries a later datestamp. So list everything changed since the month began and
        # keep the ids of this month.
        params: dict[str, str] = {
            "verb": "ListRecords",
            "metadataPrefix": "arXiv",
            "set": self.set_spec,
            "from": f"{month}-01",
        }
        while True:
            root = ElementTree.fromstring(self._get(self.oai_url, params).content)
            error = root.find(f"{_OAI}error")
            if error is not None:
                if error.get("code") == "noRecordsMatch":
                    return
                raise DownloadError(f"OAI-PMH error {error.get('code')}: {error.text}")
            for record in root.iter(f"{_OAI}record"):
                meta = record.find(f"{_OAI}metadata/{_ARXIV}arXiv")
                if meta is None:
                    continue
                arxiv_id = (meta.findtext(f"{_ARXIV}id") or "").strip()
                if not id_in_month(arxiv_id, prefix):
                    continue  # listed for an update this month, submitted earlier
                authors = [
                    " ".join(filter(None, [a.findtext(f"{_ARXIV}forenames"), a.findtext(f"{_ARXIV}keyname")]))
                    for a in meta.iter(f"{_ARXIV}author")
                ]
                yield {
                    "id": arxiv_id,
                    "title": " ".join((meta.findtext(f"{_ARXIV}title") or "").split()),
                    "authors": ", ".join(authors),
                    "abstract": " ".join((meta.findtext(f"{_ARXIV}abstract") or "").split()),
                    "categories": (meta.findtext(f"{_ARXIV}categories") or "").strip(),
                    "doi": meta.findtext(f"{_ARXIV}doi") or None,
                    "journal-ref": meta.findtext(f"{_ARXIV}journal-ref") or None,
                    "versions": [],
                    "update_date": meta.findtext(f"{_ARXIV}updated") or meta.findtext(f"{_ARXIV}created") or "",
                    "created": meta.findtext(f"{_ARXIV}created") or "",
                }
            token = root.find(f"{_OAI}ListRecords/{_OAI}resumptionToken")
            if token is None or not (token.text or "").strip():
                return
            params = {"verb": "ListRecords", "resumptionToken": token.text.strip()}

    # ------------------------------------------------------------------ e-prints
    def download_month(self, month: str, target: Path, progress: Callable[[str], None] | None = None) -> DownloadReport:
        started = time.perf_counter()
        target.mkdir(parents=True, exist_ok=True)
        papers = list(self.list_month(month))
        with (target / "metadata.jsonl").open("w", encoding="utf-8") as handle:
            for paper in papers:
                created = str(paper.pop("created", ""))
                if created:
                    paper["versions"] = [{"version": "v1", "created": _rfc2822(created)}]
                handle.write(json.dumps(paper, ensure_ascii=False) + "\n")
        downloaded = present = 0
        failed: list[tuple[str, str]] = []
        for paper in papers:
            arxiv_id = str(paper["id"])
            # The id comes from the listing: it names a file in ``target`` and nowhere else.
            path = contained_path(target, safe_paper_dir_name(arxiv_id).replace("_", ""))
            if path.exists() and path.stat().st_size > 0:
                present += 1
                continue
            try:
                response = self._get(self.eprint_url.format(id=arxiv_id))
            except (httpx.HTTPError, DownloadError) as error:
                failed.append((arxiv_id, str(error)))
                continue
            partial = path.with_name(path.name + ".part")
            partial.write_bytes(response.content)
            partial.replace(path)  # a crash never leaves a truncated e-print under the final name
            downloaded += 1
            if progress:
                progress(arxiv_id)
        return DownloadReport(len(papers), downloaded, present, failed, time.perf_counter() - started)


def _rfc2822(iso_date: str) -> str:
    """``2023-01-05`` as the snapshot writes dates (``Thu, 5 Jan 2023 00:00:00 GMT``)."""
    try:
        struct = time.strptime(iso_date.strip(), "%Y-%m-%d")
    except ValueError:
        return ""
    return time.strftime("%a, %d %b %Y 00:00:00 GMT", struct)
