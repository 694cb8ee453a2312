"""The planted-bug lists stay in step with the code: every bug's text occurs exactly once in its file (a
refactor that moves a line makes the list fail here, not silently at the next sweep), ids are unique, and
the tests each bug names exist (docs/testing.md, "Planted bugs")."""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LISTS = sorted((ROOT / "scripts" / "planted_bugs").glob("*.py"))


def _harness():
    spec = importlib.util.spec_from_file_location("planted_bugs", ROOT / "scripts/planted_bugs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("bug_list", LISTS, ids=lambda p: p.stem)
def test_every_planted_bug_applies_to_the_code(bug_list):
    harness = _harness()
    bugs, equivalent = harness.load_bugs(bug_list)
    harness.check_applies(bugs, ROOT)  # SystemExit naming the bug if a text is missing or repeated
    assert set(equivalent) <= {b[0] for b in bugs}
    for bug_id, _, old, new, tests in bugs:
        assert old != new, bug_id
        for arg in shlex.split(tests):
            if arg.startswith("tests/"):
                assert (ROOT / arg.split("::")[0]).exists(), (bug_id, arg)


def test_a_stale_bug_is_refused(tmp_path):
    harness = _harness()
    stale = tmp_path / "planted_bugs_stale.py"
    bug = '("X1", "jaxsched/envs/dag/env.py", "no such line", "x", "tests/test_dag_env.py")'
    stale.write_text(f"BUGS = [{bug}]")
    bugs, _ = harness.load_bugs(stale)
    with pytest.raises(SystemExit, match="X1: the text to replace occurs 0 times"):
        harness.check_applies(bugs, ROOT)


def test_a_bug_whose_text_is_gone_is_an_error_not_an_escape(tmp_path):
    """A clone whose code moved under the list (a commit made during a sweep) must not report the bug as
    escaped: nothing was planted and no test runs."""
    (tmp_path / "f.py").write_text("x = 1\n")
    commit = ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "f"]
    for cmd in (["init", "-q"], ["add", "f.py"], commit):
        subprocess.run(["git", "-C", str(tmp_path), *cmd], check=True)
    res = _harness().run_one(tmp_path, ("X1", "f.py", "x = 2", "x = 3", "tests/none.py"), 5.0)
    assert res["outcome"] == "error" and "occurs 0 times" in res["tail"][0], res
