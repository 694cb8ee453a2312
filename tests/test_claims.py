"""`jaxsched claims`: the shared verdicts by hand, and the committed page is what the stored records give."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jaxsched.experiments.claims import (
    BLOCK_BEGIN,
    BLOCK_END,
    NO_RECORD,
    judge,
    per_episode,
    unjudged,
    with_claims,
)

ROOT = Path(__file__).resolve().parents[1]


def test_judge_by_hand():
    rng = np.random.default_rng(0)
    higher = rng.uniform(100, 200, size=16)
    lower = higher * 0.7 + rng.normal(0, 1, size=16)  # 30 % below on every episode
    c = judge(lower, higher, paper_relative=-0.3)
    assert c["verdict"] == "reproduced" and c["p"] == pytest.approx(2 / 2**16) and c["pairs"] == 16
    assert c["power"] == 1.0
    small = higher * 0.97  # significant, but a tenth of the paper's gap
    assert judge(small, higher, -0.3)["verdict"] == "direction only (less than half the paper's gap)"
    assert judge(higher * 1.1, higher, -0.3)["verdict"] == "not reproduced"
    noise = higher + np.tile([0.5, -0.5], 8)  # no difference (p = 1), but the test would see a 30 % gap
    assert judge(noise, higher, -0.3)["verdict"].startswith("not reproduced (no difference at power")
    with pytest.raises(ValueError, match="repeat one block"):  # one evaluation tiled: refused
        judge(np.tile(lower[:8], 2), np.tile(higher[:8], 2), -0.3)


def test_per_episode_reads_both_record_layouts():
    np.testing.assert_allclose(per_episode({"per_episode": [1, 2]}), [1, 2])
    np.testing.assert_allclose(per_episode({"values": [[1, 2], [3, 4]]}), [2, 3])  # [seeds][episodes]
    assert per_episode({"mean": 1.0}) is None and NO_RECORD


def test_the_committed_claims_page_and_each_results_pages_block_are_current(tmp_path):
    """`jaxsched claims` run afresh rewrites nothing: claims.md, and the claims block leading each system's
    results page (run on copies of the pages)."""
    import shutil

    from jaxsched.cli import main
    from jaxsched.systems import systems

    pages = tmp_path / "pages"
    pages.mkdir()
    kinds = [k for k, s in systems().items() if s.claims is not None]
    for kind in kinds:
        shutil.copy(ROOT / f"docs/results/{kind}.md", pages)
    out = tmp_path / "claims.md"
    args = ["claims", "--results", str(ROOT / "docs/results"), "--out", str(out), "--pages", str(pages)]
    assert main(args) == 0
    committed = (ROOT / "docs/results/claims.md").read_text()
    assert out.read_text() == committed, "docs/results/claims.md is stale: run `jaxsched claims`"
    for kind in kinds:
        page = (pages / f"{kind}.md").read_text()
        assert page == (ROOT / f"docs/results/{kind}.md").read_text(), f"{kind}.md's claims block is stale"
        assert page.index(BLOCK_BEGIN) < page.index("\n## "), f"{kind}.md does not lead with its claims"


def test_a_pages_claims_block_is_replaced_in_place_and_inserted_under_the_title():
    one = [unjudged("A below B", "lower", "-5 %", "undecided (no per-episode record)", "b", "p", "r")]
    fresh = with_claims("# Title\n\nprose\n", [])
    assert fresh.startswith(f"# Title\n\n{BLOCK_BEGIN}\n") and fresh.endswith(f"{BLOCK_END}\n\nprose\n")
    assert "(no claim recorded yet)" in fresh
    again = with_claims(fresh, one)
    assert again.count(BLOCK_BEGIN) == 1 and "| A below B | lower | -5 % |" in again
    assert again.endswith(f"{BLOCK_END}\n\nprose\n") and with_claims(again, one) == again
    with pytest.raises(ValueError, match="never ends"):
        with_claims(f"# T\n{BLOCK_BEGIN}\n", one)
