"""The statement graph: uses and used-by across a paper and across papers (the Stacks project's chapters)."""

from __future__ import annotations

from pathlib import Path

from ingestion.records import LabelReference, Source, StatementKind, StatementRecord
from retriever.storage.statement_graph import Edge, StatementGraph


def record(
    id_: str, paper: str, label: str, *references: LabelReference, kind: StatementKind = StatementKind.LEMMA, **metadata
) -> StatementRecord:
    return StatementRecord(
        id_, Source.LOCAL, kind, f"Statement {id_}.", paper, label=label, labels=(label,) if label else (),
        references=references, metadata=metadata,
    )  # fmt: skip


# "algebra" and "topology" stand for two chapters of one book, referencing each other as CHAPTER-LABEL.
NAK = record("nak", "algebra", "lemma-NAK", kind=StatementKind.LEMMA, section_label="section-local")
USES_NAK = record("a2", "algebra", "lemma-two", LabelReference("lemma-NAK", "proof", "nak"))
FROM_TOPOLOGY = record(
    "t1", "topology", "lemma-t",
    LabelReference("algebra-lemma-NAK", "statement"),  # another chapter's lemma
    LabelReference("algebra-section-local", "proof"),  # another chapter's section
    LabelReference("missing-label", "proof"),  # nowhere
)  # fmt: skip


def test_uses_and_used_by_within_and_across_papers(tmp_path: Path) -> None:
    graph = StatementGraph(tmp_path)
    graph.add([NAK, USES_NAK, FROM_TOPOLOGY])
    assert graph.uses("a2") == [Edge("a2", "lemma-NAK", "proof", "nak")]
    assert graph.uses("t1") == [
        Edge("t1", "algebra-lemma-NAK", "statement", "nak"),
        Edge("t1", "algebra-section-local", "proof", "", ""),  # NAK has no section name here
        Edge("t1", "missing-label", "proof"),
    ]
    assert graph.used_by("nak") == ["a2", "t1"]
    assert graph.counts(["nak", "a2", "t1", "unknown"]) == {
        "nak": (0, 2),
        "a2": (1, 0),
        "t1": (1, 0),
        "unknown": (0, 0),
    }
    assert graph.links_among(["nak", "a2", "t1"]) == {("a2", "nak"), ("t1", "nak")}
    assert graph.links_among(["a2", "t1"]) == set()
    assert graph.by_label("algebra-lemma-NAK") == ["nak"] and graph.by_label("lemma-NAK", "algebra") == ["nak"]
    assert graph.kinds(["nak", "t1", "unknown"]) == {"nak": "lemma", "t1": "lemma"}


def test_a_section_of_another_paper_resolves_by_its_name(tmp_path: Path) -> None:
    graph = StatementGraph(tmp_path)
    named = StatementRecord(
        "nak", Source.LOCAL, StatementKind.LEMMA, "t", "algebra", label="lemma-NAK", labels=("lemma-NAK",),
        section="Local rings", metadata={"section_label": "section-local"},
    )  # fmt: skip
    graph.add([named, FROM_TOPOLOGY])
    assert graph.uses("t1")[1] == Edge("t1", "algebra-section-local", "proof", "", "Local rings")


def test_a_later_paper_resolves_earlier_references_and_removal_forgets(tmp_path: Path) -> None:
    graph = StatementGraph(tmp_path)
    graph.add([FROM_TOPOLOGY])
    assert not graph.uses("t1")[0].resolved  # the chapter it names is not in yet
    graph.add([NAK, USES_NAK])
    assert graph.uses("t1")[0].target_id == "nak"  # nothing rewritten: resolved by query
    graph.add([NAK, USES_NAK])  # again: replaced, not doubled
    assert graph.used_by("nak") == ["a2", "t1"] and graph.count() == 3
    graph.remove(["t1"])
    assert graph.used_by("nak") == ["a2"] and graph.ids() == {"nak", "a2"}


def test_ambiguous_labels_cycles_and_split_statements(tmp_path: Path) -> None:
    graph = StatementGraph(tmp_path)
    first = record("x1", "x", "lemma-a", LabelReference("lemma-b", "proof", "x2"))
    second = record("x2", "x", "lemma-b", LabelReference("lemma-a", "proof", "x1"))  # a cycle
    other = record("y1", "x-lemma", "a")  # "x-lemma-a" names both x/lemma-a and x-lemma/a
    part_two = record("x1b", "x", "lemma-a", part=2, parts=2)  # a split statement: named by its first part
    reader = record("z1", "z", "", LabelReference("x-lemma-a", "statement"), LabelReference("x-lemma-b", "proof"))
    graph.add([first, second, other, part_two, reader])
    assert graph.used_by("x1") == ["x2"] and graph.used_by("x2") == ["x1", "z1"]
    assert [edge.resolved for edge in graph.uses("z1")] == [False, True]  # the ambiguous one stays unresolved
    assert graph.counts(["z1", "x1", "x2"]) == {"z1": (1, 0), "x1": (1, 1), "x2": (1, 2)}
    graph.clear()
    assert graph.count() == 0 and graph.uses("z1") == []


def test_ten_thousand_references_in_one_statement(tmp_path: Path) -> None:
    graph = StatementGraph(tmp_path)
    many = [LabelReference(f"eq-{i}", "proof") for i in range(10_000)]
    graph.add([record("big", "p", "lemma-big", *many), NAK])
    assert len(graph.uses("big")) == 10_000 and graph.used_by("nak") == []


def test_a_graph_written_before_citations_learns_its_papers_arxiv_ids(tmp_path: Path) -> None:
    import sqlite3

    from ingestion.records import Citation

    old = StatementRecord("old", Source.ARXIV, StatementKind.THEOREM, "Old.", "2101.00001v3", label="t")
    graph = StatementGraph(tmp_path)
    graph.add([old])
    with sqlite3.connect(graph.path) as db:  # as a graph of the version before citations left it
        db.execute("DELETE FROM statement_arxiv")
        db.execute("PRAGMA user_version = 0")
    cites_old = (Citation("k", "proof", "2101.00001"),)
    citing = StatementRecord("new", Source.ARXIV, StatementKind.LEMMA, "New.", "2102.00002", citations=cites_old)
    reopened = StatementGraph(tmp_path)
    reopened.add([citing])
    [cited] = reopened.citations("new")
    assert (cited.paper_id, cited.statements, cited.one_statement_id) == ("2101.00001v3", 1, "old")
    assert reopened.citing("old") == (["new"], 1)


def test_a_deep_walk_reads_the_graph_once_per_level_and_visits_a_bounded_number(tmp_path: Path) -> None:
    # Issue 61, defect 13: a walk (`depth` up to 5 through the API) opened the file and ran a query per node,
    # with no bound on the nodes.
    from types import SimpleNamespace

    from rag_app.search.statement_links import StatementLinks

    graph = StatementGraph(tmp_path)
    survey = record("s", "p", "thm-s", *(LabelReference(f"lemma-{i}", "proof", f"l{i}") for i in range(40)))
    lemmas = [record(f"l{i}", "p", f"lemma-{i}", LabelReference(f"def-{i}", "proof", f"d{i}")) for i in range(40)]
    definitions = [record(f"d{i}", "p", f"def-{i}", kind=StatementKind.DEFINITION) for i in range(40)]
    graph.add([survey, *lemmas, *definitions])
    opened = 0
    connect = graph._connect

    def counted_connect() -> object:
        nonlocal opened
        opened += 1
        return connect()

    graph._connect = counted_connect  # type: ignore[method-assign]
    links = StatementLinks(SimpleNamespace(graph=graph))  # type: ignore[arg-type]
    assert links._definition_ids("s", depth=5) == [f"d{i}" for i in range(40)]
    assert opened <= 2 * 3  # a read of the uses and one of the kinds per level walked (two levels, then none)
    bounded = links._definition_ids("s", depth=5, max_statements=21)  # s, 20 lemmas: no room for a definition
    assert bounded == []
    assert len(links._definition_ids("s", depth=5, max_statements=51)) == 10


def test_citing_sentences_follow_the_graph_across_papers_reingests_and_removals(tmp_path: Path) -> None:
    graph = StatementGraph(tmp_path)
    by_name = LabelReference("lemma-NAK", "proof", "nak", "", "Hence M = 0 by Nakayama's lemma.")
    in_chapter = record("a2", "algebra", "lemma-two", by_name)
    stalk = LabelReference("algebra-lemma-NAK", "statement", "", "", "The stalk vanishes by [ref].")
    from_topology = record("t1", "topology", "lemma-t", stalk)
    graph.add([from_topology])  # before the chapter it cites
    assert graph.citing_text.sentences(["nak"]) == {}
    graph.add([NAK, in_chapter])  # the other chapter arrives: its sentence counts at once
    cited = graph.citing_text.sentences(["nak", "a2"])
    assert [(c.source_id, c.sentence, c.where) for c in cited["nak"]] == [
        ("a2", "Hence M = 0 by Nakayama's lemma.", "proof"),
        ("t1", "The stalk vanishes by [ref].", "statement"),
    ] and "a2" not in cited
    terms = graph.citing_text.terms(["nak"])["nak"]
    assert "nakayama" in terms[0] and "ref" not in terms[1] and "stalk" in terms[1]
    reworded = record("a2", "algebra", "lemma-two",
                      LabelReference("lemma-NAK", "proof", "nak", "", "So M is zero."))  # fmt: skip
    graph.add([reworded])  # a re-ingest replaces its sentence
    assert [c.sentence for c in graph.citing_text.sentences(["nak"])["nak"]] == [
        "So M is zero.",
        "The stalk vanishes by [ref].",
    ]
    graph.remove(["t1"])  # a removed paper takes its sentences away
    assert [c.source_id for c in graph.citing_text.sentences(["nak"], limit=5)["nak"]] == ["a2"]


def test_a_graph_written_before_citing_sentences_gains_the_column(tmp_path: Path) -> None:
    import sqlite3

    with sqlite3.connect(tmp_path / "graph.sqlite") as db:
        db.execute(
            "CREATE TABLE reference (id TEXT NOT NULL, position INTEGER NOT NULL, label TEXT NOT NULL, "
            "location TEXT NOT NULL, target_id TEXT NOT NULL, section TEXT NOT NULL, paper_id TEXT NOT NULL)"
        )
        db.execute("INSERT INTO reference VALUES ('old', 0, 'lemma-NAK', 'proof', 'nak', '', 'algebra')")
        db.execute("PRAGMA user_version = 1")
    graph = StatementGraph(tmp_path)
    assert graph.citing_text.sentences(["nak"]) == {}  # its references have no sentence until re-ingested
    graph.add([NAK, USES_NAK, record("a3", "algebra", "", LabelReference("lemma-NAK", "proof", "nak", "", "By it."))])
    assert [c.source_id for c in graph.citing_text.sentences(["nak"])["nak"]] == ["a3"]


def test_the_citing_text_ranks_statements_by_what_their_citers_say_and_follows_the_graph(tmp_path: Path) -> None:
    graph = StatementGraph(tmp_path)
    by_name = LabelReference("algebra-lemma-NAK", "proof", "", "", "The stalk vanishes by Nakayama's lemma.")
    graph.add([record("t1", "topology", "lemma-t", by_name)])  # cites a chapter not in yet
    assert graph.citing_text.best("Nakayama lemma", 5) == []
    graph.add([NAK])  # the chapter arrives: the earlier citer's sentence becomes its text
    assert [found for found, _ in graph.citing_text.best("Nakayama lemma", 5)] == ["nak"]
    other = LabelReference("lemma-NAK", "proof", "nak", "", "Hence the module is flat.")
    graph.add([record("a2", "algebra", "lemma-two", other)])  # a second citer adds to it
    assert [found for found, _ in graph.citing_text.best("flat module", 5)] == ["nak"]
    graph.remove(["t1"])  # a removed paper takes its words away
    assert graph.citing_text.best("Nakayama stalk", 5) == [] and graph.citing_text.best("flat", 5)[0][0] == "nak"
    graph.add([NAK])  # the cited statement ingested again keeps what others say of it
    assert graph.citing_text.best("flat", 5)[0][0] == "nak"
    graph.clear()
    assert graph.citing_text.best("flat", 5) == []


def test_citing_text_out_of_step_is_found_and_rebuilt(tmp_path: Path) -> None:
    import sqlite3

    graph = StatementGraph(tmp_path)
    cites = LabelReference("lemma-NAK", "proof", "nak", "", "Hence the module is flat.")
    graph.add([NAK, record("a2", "algebra", "lemma-two", cites)])
    assert graph.citing_text.out_of_step() == set()
    with sqlite3.connect(graph.path) as db:  # a kill between two writes, or a hand's edit
        db.execute("DELETE FROM citing_text")
    assert graph.citing_text.out_of_step() == {"nak"} and graph.citing_text.best("flat", 5) == []
    graph.citing_text.rebuild()
    assert graph.citing_text.out_of_step() == set() and graph.citing_text.best("flat", 5)[0][0] == "nak"
