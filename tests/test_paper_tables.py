"""`experiments.paper`: what the `jaxsched table` commands share — the methods × metrics table (ours beside
the paper's, ratios to a reference method or to another column, paired tests) and the comma lists."""

from __future__ import annotations

import pytest

from jaxsched.experiments.paper import Column, methods_table, parse_numbers


def _stats(mean, std=1.0, **extra):
    return {"mean": mean, "std": std, **extra}


RESULTS = {
    "fifo": {"util": _stats(100.0), "delay": _stats(20.0, 2.0)},
    "agent": {
        "util": _stats(150.0),
        "delay": _stats(10.0, 0.5, vs_best={"ratio": 0.8, "against": "fifo", "p": 0.0312, "n": 5}),
    },  # fmt: skip
    "extra": {"util": _stats(50.0)},  # not in the paper, evaluated: listed after the paper's rows
}
PAPER = {"fifo": (90.0, -30.0), "agent": (120.0, -15.0), "never": (1.0, 1.0)}  # the paper prints −delay


def test_a_methods_table_sets_ours_beside_the_paper_with_ratios_and_tests():
    columns = (
        Column("util (paper)", "util", 0),
        Column("÷ FIFO (paper)", "util", 0, over="fifo"),
        Column("−delay (paper)", "delay", 1, sign=-1, key="neg_delay"),
        Column("vs best", "delay", test=True, key="vs_best"),
    )
    lines, numbers = methods_table(
        {"": RESULTS}, columns, PAPER, {"agent": "Agent"}, order=("agent", "never")
    )
    assert lines[0] == "| method | util (paper) | ÷ FIFO (paper) | −delay (paper) | vs best |"
    assert lines[1] == "|---|---:|---:|---:|---:|"
    # the paper's row order first (a row the paper has but nobody evaluated is left out), then the rest
    assert [line.split(" | ")[0][2:] for line in lines[2:]] == ["Agent", "fifo", "extra"]
    agent = "| Agent | 150.0 ± 1.0 (120.0) | ×1.500 (×1.333) | -10.0 ± 0.5 (-15.0) | "
    assert lines[2] == agent + "×1.250 vs fifo, p = 0.031 (n = 5) |"
    assert lines[4] == "| extra | 50.0 ± 1.0 | ×0.500 | — | — |"  # no paper, no delay evaluated
    test = RESULTS["agent"]["delay"]["vs_best"]
    assert numbers["agent"] == {"paper": (120.0, -15.0), "util": 150.0, "neg_delay": -10.0, "vs_best": test}
    assert numbers["extra"]["neg_delay"] is None and numbers["extra"]["paper"] is None


def test_a_ratio_to_another_column_of_the_row_and_its_value():
    sources = {"a": {"fifo": {"util": _stats(100.0)}}, "b": {"fifo": {"util": _stats(80.0)}}}
    columns = (
        Column("a", "util", 0, source="a", key="a"),
        Column("b", "util", 1, source="b", key="b"),
        Column("b ÷ a", "util", 1, source="b", over_column="a"),
        Column("b ÷ FIFO", "util", 1, source="b", over="fifo", value=True, key="b_value"),
    )
    lines, numbers = methods_table(sources, columns, {"fifo": (90.0, 45.0)})
    assert (
        lines[2]
        == "| fifo | 100.0 ± 1.0 (90.0) | 80.0 ± 1.0 (45.0) | ×0.800 (×0.500) | 80.0 ×1.000 (×1.000) |"
    )
    assert numbers["fifo"] == {"paper": (90.0, 45.0), "a": 100.0, "b": 80.0, "b_value": 80.0}


def test_comma_lists_name_their_flag():
    assert parse_numbers("0.5, 1,2", "--loads") == [0.5, 1.0, 2.0]
    assert parse_numbers("", "--loads") == []
    assert parse_numbers("20,40", "--jobs", integer=True) == [20, 40]
    with pytest.raises(ValueError, match="--jobs must be a comma-separated list of integers"):
        parse_numbers("20,4.5", "--jobs", integer=True)
    with pytest.raises(ValueError, match="--loads must be positive"):
        parse_numbers("1,0", "--loads")


def test_published_numbers_are_read_as_levels_or_relations():
    """`paper_rows` over a system's paper_numbers.csv: SCED²'s Fig. 10(b) gives a level (557 s against the
    best baseline's 19,075 s) and a relation on the same row (34×); each is asked for by itself."""
    from jaxsched.experiments.paper import paper_rows
    from jaxsched.systems import get_system

    numbers = get_system("sced2").calibration.numbers
    source, column = "Fig. 10(b) (§IV-C text)", [("0.68", "avg_wait")]
    assert paper_rows(numbers, source, column) == {"sced2": (557.0,), "best_baseline": (19075.0,)}
    assert paper_rows(numbers, source, column, relations=True) == {"sced2": (34.0,)}
    assert paper_rows(numbers, "no such source", column) == {}
