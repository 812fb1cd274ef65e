"""The parser pool ends without stray output (issue 62, defect 4)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Workers start at different speeds (as on busy cores: the main module is imported again in each one,
# before it opens the pool's channel), a paper runs over its time limit so that its worker is killed
# and replaced just before the pool closes, and SIGTERM is ignored (inherited by the workers, as under
# some supervisors), so a worker still starting outlives the pool's close. Before the fix the late
# workers printed `FileNotFoundError` tracebacks from `SemLock._rebuild` after a run that went well.
SCRIPT = textwrap.dedent(
    """
    import os, signal, time
    from ingestion.paper_pool import parse_in_pool
    from ingestion.parallel_latex_ingestor import _report_problem
    from ingestion.problems import IngestProblem

    if __name__ == "__mp_main__":
        time.sleep(1.5 * (os.getpid() % 3))

    def parse(seconds):
        time.sleep(seconds)
        return _report_problem(IngestProblem("paper.tex", "parsed"))

    def task(seconds):
        return parse, (seconds,)

    if __name__ == "__main__":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for outcome in parse_in_pool([0.0, 3.0], task, 3, 1):
            print("result" if outcome.result else outcome.error, flush=True)
    """
)


def test_a_pool_that_killed_a_worker_ends_with_a_clean_stderr(tmp_path: Path) -> None:
    script = tmp_path / "pool_run.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["result", "parsing took longer than 1 s"]
    assert done.stderr == "", done.stderr


def test_a_pool_given_no_paper_waits_for_no_worker(monkeypatch) -> None:
    """A rerun of a month whose papers are all unchanged schedules nothing: the pool never starts a worker, so
    closing it waits for none (it waited out its 30 s limit for workers that were never spawned)."""
    from ingestion import paper_pool

    waited_for: list[int] = []
    monkeypatch.setattr(paper_pool, "_wait_for_starting_workers", lambda started, spawned: waited_for.append(spawned))
    assert list(paper_pool.parse_in_pool([], lambda item: (print, (item,)), 2, 1)) == []
    assert waited_for == [0]
