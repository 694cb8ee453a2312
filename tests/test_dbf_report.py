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
