"""`jaxsched demo`, the README's main job: its numbers at the default size are pinned (golden)."""

from golden import check_golden

from jaxsched.systems.dbf.demo import run_demo


def test_demo_default_numbers_are_unchanged(capsys):
    rows = run_demo()
    assert "fcfs" in capsys.readouterr().out
    metrics = ("avg_wait", "avg_bsld", "utilization", "avg_queue_len")
    check_golden("demo_default", {f"{p}.{m}": rows[p][m] for p in rows for m in metrics}, rtol=1e-6)
