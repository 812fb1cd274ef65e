"""Benchmark: stream a generated Math StackExchange dump into records (no embedding).

Writes a synthetic ``Posts.xml`` of N posts (2 answers per question, bodies with paragraphs,
formulas, emphasis, links and code), then reads it with ``MseRecordReader`` and reports posts/s
and the resident memory sampled along the way: flat memory is the point.

    python bench/mse_dump.py [--posts 1000000] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import tempfile
import time
from pathlib import Path
from xml.sax.saxutils import quoteattr

from ingestion.mse_records import MseRecordReader

ROOT = Path(__file__).resolve().parents[1]
WORDS = ("let prove show group ring module field finite prime ideal map space set every there exists").split()  # noqa: SIM905


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def body(rng: random.Random) -> str:
    paragraphs = []
    for _ in range(rng.randint(1, 3)):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(15, 50)))
        n = rng.randint(1, 99)
        paragraphs.append(
            f'<p>{words} <span class="math-container">$x^{{{n}}} + y_{n} = \\frac{{{n}}}{{2}}$</span> and '
            f'<em>{rng.choice(WORDS)}</em> <a href="https://example.org/{n}">see</a>.</p>'
        )
    if rng.random() < 0.2:
        paragraphs.append('<p><span class="math-container">$$\\sum_{k=1}^n k = \\frac{n(n+1)}{2}$$</span></p>')
    if rng.random() < 0.1:
        paragraphs.append("<pre><code>for k in range(n): total += k</code></pre>")
    return "".join(paragraphs)


def write_dump(path: Path, posts: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        out.write('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n')
        post_id = 0
        question = 0
        while post_id < posts:
            post_id += 1
            if post_id % 3 == 1:
                question = post_id
                title = " ".join(rng.choice(WORDS) for _ in range(8))
                out.write(
                    f'  <row Id="{post_id}" PostTypeId="1" AcceptedAnswerId="{post_id + 1}" '
                    f'Score="{rng.randint(-2, 50)}" '
                    f'CreationDate="2015-01-01T00:00:00.000" Tags="|algebra|group-theory|" Title={quoteattr(title)} '
                    f"Body={quoteattr(body(rng))} />\n"
                )
            else:
                out.write(
                    f'  <row Id="{post_id}" PostTypeId="2" ParentId="{question}" Score="{rng.randint(-2, 50)}" '
                    f'CreationDate="2015-01-02T00:00:00.000" Body={quoteattr(body(rng))} />\n'
                )
        out.write("</posts>\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-mse-") as tmp:
        dump = Path(tmp) / "Posts.xml"
        started = time.perf_counter()
        write_dump(dump, args.posts)
        generated = time.perf_counter() - started
        reader = MseRecordReader(dump)
        samples: list[tuple[int, float]] = [(0, rss_mb())]
        records = 0
        started = time.perf_counter()
        for records, _ in enumerate(reader.records(), start=1):
            if records % max(args.posts // 20, 1) == 0:
                samples.append((records, round(rss_mb(), 1)))
        seconds = time.perf_counter() - started
        size = dump.stat().st_size
    result = {
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "posts": args.posts,
        "dump_bytes": size,
        "generate_seconds": round(generated, 1),
        "records": records,
        "seconds": round(seconds, 1),
        "posts_per_s": round(args.posts / seconds, 1),
        "rss_mb_by_records": samples,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "problems": len(reader.problems),
    }
    print(json.dumps(result))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "mse_dump.json").write_text(json.dumps(result, indent=2) + "\n")
    rss = ", ".join(f"{n:,}: {mb} MB" for n, mb in samples)
    (args.out / "mse_dump.md").write_text(
        f"Math StackExchange dump, parse to records without embedding ({result['machine']['platform']}, "
        f"{result['machine']['cpus']} CPUs)\n\n"
        "| posts | dump MB | records | seconds | posts/s | peak RSS MB |\n"
        "| ---: | ---: | ---: | ---: | ---: | ---: |\n"
        f"| {args.posts:,} | {size / 1e6:,.0f} | {records:,} | {result['seconds']} | {result['posts_per_s']} "
        f"| {result['peak_rss_mb']} |\n\nResident memory by records read: {rss}\n"
    )


if __name__ == "__main__":
    main()
