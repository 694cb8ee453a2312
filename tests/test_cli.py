"""The command line: bad input gives one clear line and exit code 2, never a traceback from JAX."""

import json
import re

import pytest

from jaxsched.cli import main

ROW = "{id} {submit} -1 {run} {procs} -1 -1 {procs} -1 -1 1 1 1 1 1 1 -1 -1"


def _swf(tmp_path, lines, header="; MaxNodes: 8"):
    path = tmp_path / "trace.swf"
    path.write_text("\n".join(([header] if header else []) + lines) + "\n")
    return str(path)


def _row(i, submit, run=10, procs=2):
    return ROW.format(id=i, submit=submit, run=run, procs=procs)


@pytest.mark.parametrize(
    "lines,header,expect",
    [
        (
            [_row(1, 0), _row(2, 5).replace(" 10 ", " abc ", 1)],
            "; MaxNodes: 8",
            r"line 3: column 4 \(run time\)",
        ),
        ([_row(1, 0), "2 5 -1 10 2"], "; MaxNodes: 8", r"line 3: found 5 columns"),
        ([_row(1, 0), _row(2, 5)], None, r"no 'MaxNodes'/'MaxProcs' header.*--n-cores"),
        (
            [_row(1, 0), _row(2, 5, procs=64)],
            "; MaxNodes: 8",
            r"line 3: job id 2 needs 64 cores.*--drop-too-wide",
        ),
        ([_row(1, 50), _row(2, 5)], "; MaxNodes: 8", r"not in submit order.*--order submit"),
        # every run time unknown: refused, not a table of made-up 10 s jobs (bsld 1.00 for every policy)
        (
            [_row(1, 0, run=-1), _row(2, 5, run=-1)],
            "; MaxNodes: 8",
            r"every run time \(column 4\) is negative",
        ),
    ],
)
def test_malformed_trace_is_one_clear_line(tmp_path, capsys, lines, header, expect):
    path = _swf(tmp_path, lines, header)
    rc = main(["hpc-table", "--trace", path, "--length", "2", "--starts", "0"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("jaxsched hpc-table: error: ") and err.count("\n") == 1
    assert re.search(expect, err), err


def test_flags_fix_what_the_errors_name(tmp_path, capsys):
    wide = _swf(tmp_path, [_row(1, 0), _row(2, 5), _row(3, 6, procs=64)])
    assert (
        main(
            ["hpc-table", "--trace", wide, "--length", "2", "--starts", "0", "--drop-too-wide", "--json", "-"]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert set(json.loads(captured.out)["means"]) == {"fcfs", "wfp3", "uni", "sjf", "f1"}
    assert "of 3 jobs, 1 dropped as wider than the machine" in captured.err  # said, not silent
    headerless = _swf(tmp_path, [_row(1, 0), _row(2, 5)], header=None)
    assert main(["hpc-table", "--trace", headerless, "--length", "2", "--starts", "0", "--n-cores", "8",
                 "--json", "-", "--policies", "fcfs"]) == 0  # fmt: skip
    # two 2-core jobs on 8 cores never wait: bounded slowdown 1
    assert json.loads(capsys.readouterr().out)["means"] == {"fcfs": 1.0}


def test_missing_file_and_unknown_policy(tmp_path, capsys):
    assert main(["hpc-table", "--trace", str(tmp_path / "none.swf")]) == 2
    assert "trace file not found" in capsys.readouterr().err
    path = _swf(tmp_path, [_row(1, 0), _row(2, 5)])
    assert main(["hpc-table", "--trace", path, "--length", "2", "--starts", "0", "--policies", "magic"]) == 2
    assert "magic" in capsys.readouterr().err


def test_bench_measures_the_env_of_any_config(tmp_path, capsys, repo_root, monkeypatch):
    """`jaxsched bench CONFIG`: the env and training bank of the config's system (here DAS), acting with
    the named heuristic, every call a step of the vmapped env, with a live line for the build, each
    compile and the timed runs, and the memory line through the two batches (a state's bytes per env the
    same at both); `--policy` without a config is an error."""
    from jaxsched.experiments import live as live_module

    monkeypatch.setattr(live_module, "QUIET_S", 0.0)  # every phase gets its lines, however quick
    out = tmp_path / "bench.json"
    args = ["bench", str(repo_root / "configs/das/quick.yaml"), "--policy", "tetris", "--batches", "2,4",
            "--steps", "4", "--repeats", "1", "--json", str(out)]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr()
    assert "das env of" in printed.out and "acting with tetris" in printed.out
    for phase in ("building the env and workload of", "batch 2: compiling the 4-step rollout",
                  "batch 2: 1 timed runs of 4 steps"):  # fmt: skip
        assert f"{phase}" in printed.err, phase
    record, bigger = json.loads(out.read_text())
    assert record["env"] == "gpu_cloud" and record["batch"] == 2 and record["steps_per_s"] > 0
    assert record["state_bytes_per_env"] == bigger["state_bytes_per_env"] > 0
    assert bigger["rollout_working_bytes"] > record["rollout_working_bytes"] > 0
    assert "gpu_cloud memory: state" in printed.out and "fits" in printed.out
    assert main(["bench", "--policy", "tetris"]) == 2
    assert "--policy needs a CONFIG" in capsys.readouterr().err


def test_repaired_run_times_are_counted_on_stderr_and_in_the_json(tmp_path, capsys):
    """One invalid run time of three: repaired as RLScheduler does (10 s), and said so (stderr, JSON)."""
    path = _swf(tmp_path, [_row(1, 0), _row(2, 5, run=-1), _row(3, 6)])
    assert main(["hpc-table", "--trace", path, "--length", "2", "--starts", "0", "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert "of 3 jobs, 1 had a negative run time, set to 10 s" in captured.err
    assert json.loads(captured.out)["trace"]["negative_runtime_set_to_10s"] == 1


def _commands(parser) -> dict[str, str]:
    """`{command: help}` of a parser's subcommands, in order."""
    import argparse

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {c.dest: c.help for c in sub._choices_actions}


def test_help_lists_every_command_without_importing_the_systems():
    """`jaxsched --help` and the shared verbs' parser list the systems' own commands from
    `cli.SYSTEM_COMMANDS` (nothing imported); the list equals the one the systems declare, and `--help`
    starts without jax."""
    import subprocess
    import sys

    from jaxsched.cli import build_parser

    assert _commands(build_parser(systems=False)) == _commands(build_parser(systems=True))
    code = (
        "import sys; from jaxsched.cli import main\n"
        "try: main(['--help'])\n"
        "except SystemExit: pass\n"
        "print('jax' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False"
