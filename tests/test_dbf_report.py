"""`jaxsched table dbf`: the DBF comparison table and plots from run directories."""

import json

from jaxsched.cli import main
from jaxsched.experiments.config import dump_config
from jaxsched.systems.dbf.config import dbf_config_from_dict as config_from_dict

METRICS = ("avg_wait", "avg_queue_len", "utilization", "avg_job_load", "avg_bsld")


def _fake_run(tmp_path, name, tail, wait_per_seed):
    run = tmp_path / name
    run.mkdir()
    cfg = config_from_dict(
        {"name": name, "num_seeds": len(wait_per_seed), "env": {"window": 10, "tail": tail}}
    )
    dump_config(cfg, run / "config.yaml")
    agent = {k: {"mean": 1.0, "std": 0.0, "per_seed": [1.0] * len(wait_per_seed)} for k in METRICS}
    agent["avg_wait"] = {"mean": 0.0, "std": 0.0, "per_seed": wait_per_seed}
    fcfs = {k: {"mean": 2.0, "std": 0.5} for k in METRICS}
    (run / "eval.json").write_text(json.dumps({"agent": agent, "fcfs": fcfs, "sjf_easy": fcfs}))
    return str(run)


def test_report_table_uses_seed_spread_and_writes_plots(tmp_path, capsys):
    a = _fake_run(tmp_path, "split", 1, [100.0, 200.0, 300.0])
    b = _fake_run(tmp_path, "head", 0, [400.0, 400.0, 400.0])
    out = tmp_path / "out"
    assert main(["table", "dbf", a, b, "--out", str(out)]) == 0
    table = (out / "table.md").read_text()
    # mean ± population std over the three seed means: 200 ± 81.6
    assert "| DBF M=10 (9 head + 1 tail), 3 seeds | 200 ± 82 |" in table
    assert "| DBF M=10 (10 head + 0 tail), 3 seeds | 400 ± 0 |" in table
    assert "| FCFS | 2 ± 0 |" in table and "| SJF + EASY |" in table
    assert (out / "split.png").stat().st_size > 0


def test_report_names_a_run_without_results(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["table", "dbf", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    assert "no config.yaml" in capsys.readouterr().err


def test_report_marks_the_papers_claims_paired_by_episode(tmp_path):
    from pathlib import Path

    from jaxsched.systems.dbf.report import NO_PAIRS, _run, split_claims, split_report

    a = _fake_run(tmp_path, "split", 1, [100.0, 200.0, 300.0])
    b = _fake_run(tmp_path, "head", 0, [400.0, 400.0, 400.0])
    before = split_claims([_run(Path(a)), _run(Path(b))])  # evaluated before per-episode values existed
    assert {c["verdict"] for c in before} == {NO_PAIRS} and len(before) == 4  # 2 claims × 2 metrics
    # per-episode values (8 episodes) for both agents and SJF + EASY
    for run, agent_waits in ((a, range(10, 18)), (b, range(30, 38))):
        path = Path(run) / "eval.json"
        d = json.loads(path.read_text())
        for k in ("avg_wait", "avg_queue_len"):
            d["agent"][k]["per_episode"] = [float(x) for x in agent_waits]
            d["sjf_easy"][k] = {**d["sjf_easy"][k], "per_episode": [float(x) for x in range(20, 28)]}
        path.write_text(json.dumps(d))
    got = {(c["lower"], c["higher"], c["metric"]): c for c in split_claims([_run(Path(a)), _run(Path(b))])}
    split = got[("DBF 9 + 1", "DBF 10 + 0", "avg_wait")]
    assert split["verdict"] == "reproduced" and split["diff"] == -20 and split["p"] == 2 / 2**8
    assert got[("DBF 9 + 1", "SJF + EASY", "avg_queue_len")]["verdict"] == "reproduced"
    assert ("DBF 10 + 0", "SJF + EASY", "avg_wait") not in got  # the head-only run is not the claim's DBF
    table = split_report([a, b], tmp_path / "out")
    assert "| DBF 9 + 1 < DBF 10 + 0 | avg_wait | -20.0 | -59.7 % | 8 | 0.0078 | reproduced |" in table
