"""The paper tables' shared layer's planted bugs (`experiments/paper.py`, `experiments.evaluate.load_evaluated`
and DAS's rows), for `scripts/planted_bugs.py` (docs/testing.md, "Planted bugs")."""

# ruff: noqa: E501  (the replaced lines are quoted whole)

T_PAPER = "tests/test_paper_tables.py tests/test_systems.py"
T_ROWS = "tests/test_das_table_runs.py"

BUGS = [
    # a ratio to the reference method taken against the row's own mean (every ratio ×1)
    ("P1", "jaxsched/experiments/paper.py", "                other = c.over or m\n", "                other = m\n", T_PAPER),
    # the paper's value beside ours read from the next column of its row
    ("P2", "jaxsched/experiments/paper.py", "    return None if index is None or method not in paper else paper[method][index]", "    return None if index is None or method not in paper else paper[method][min(index + 1, len(paper[method]) - 1)]", T_PAPER),
    # the published relations (ratios) mixed into the levels: the last row of a key wins
    ("P3", "jaxsched/experiments/paper.py", "              if n.source == source and (n.kind == \"relation\") == relations}  # fmt: skip", "              if n.source == source}  # fmt: skip", "tests/test_paper_tables.py tests/test_sced2.py"),
    # a learner's own eval.json record read as policies ("config", "results", ...)
    ("P4", "jaxsched/experiments/evaluate.py", "            if label is not None and \"results\" in payload:  # a learner's own record", "            if False:", T_ROWS),
    # the heuristic rows not repeated per training seed of --runs: pairs lost
    ("P5", "jaxsched/systems/das/rows.py", "    repeats = seeds.get(\"das\", max(seeds.values(), default=1))", "    repeats = 1", T_ROWS),
]
