"""The library's front door: `jaxsched.make` / `registered()` and `policies.make_heuristic`, used as a
new user would (README "Using it"): a heuristic in either env under `vmap` and `lax.scan`."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest

import jaxsched
from jaxsched.envs import GPUCloudEnv, GPULocalityEnv, HPCEnv
from jaxsched.experiments.evaluate import evaluate_policies
from jaxsched.policies import heuristic_names, make_heuristic


def test_registered_names_their_paper_and_defaults():
    specs = jaxsched.registered()
    assert {
        "dbf",
        "dbf-quick",
        "das-small",
        "das-medium",
        "das-large",
        "das-quick",
        "sced2",
        "sced2-quick",
    } <= set(specs)
    assert specs["sced2"].defaults["n_servers"] == 15 and specs["sced2-quick"].defaults["n_servers"] == 4
    assert specs["dbf"].defaults["n_cores"] == 256 and specs["dbf-quick"].defaults["n_cores"] == 64
    assert specs["das-quick"].defaults["n_jobs"] == 2000 and "size" not in specs["das-small"].defaults
    assert "Back-Filling" in specs["dbf"].paper and "DAS" in specs["das-large"].paper
    # printed, each name shows the overrides it takes with its own values
    lines = repr(specs).splitlines()
    assert len(lines) == 2 * len(specs)
    quick = lines[lines.index(next(x for x in lines if x.startswith("dbf-quick:"))) + 1]
    assert quick.startswith("    overrides: n_cores=64, window=10, ") and "episode_jobs=128" in quick
    with pytest.raises(ValueError, match="unknown environment 'sced3'; registered: dbf, "):
        jaxsched.make("sced3")
    with pytest.raises(ValueError, match="dbf: unknown override.s. cores; valid: n_cores, "):
        jaxsched.make("dbf", cores=8)
    with pytest.raises(ValueError, match=r"jobs .* need more than the whole cluster .*n_machines = 1"):
        jaxsched.make("das-quick", n_machines=1)


def test_make_heuristic_is_the_systems_own_factory():
    """The HPC `_easy` suffix and `backfill=True` are one policy: the same schedule, episode for episode;
    a wrong name or option is an error naming it."""
    env, params = jaxsched.make("dbf-quick")
    keys = jax.random.split(jax.random.key(3), 2)
    policies = {
        "suffix": make_heuristic(env, "fcfs_easy"),
        "option": make_heuristic(env, "fcfs", backfill=True),
        "plain": make_heuristic(env, "fcfs"),
    }
    out = evaluate_policies(env, params, policies, keys)
    np.testing.assert_array_equal(out["suffix"]["avg_wait"], out["option"]["avg_wait"])
    assert not np.array_equal(out["suffix"]["avg_wait"], out["plain"]["avg_wait"])
    with pytest.raises(ValueError, match="unknown heuristic 'tetris' for HPCEnv; choose from fcfs, "):
        make_heuristic(env, "tetris")
    with pytest.raises(ValueError, match="heuristic 'fcfs' takes no option.s. window"):
        make_heuristic(env, "fcfs", window=3)


@pytest.mark.parametrize(
    "name,heuristic", [("dbf-quick", "fcfs_easy"), ("das-quick", "tetris"), ("sced2-quick", "dsif")]
)
def test_the_using_pages_example_runs_as_written(name, heuristic, capsys):
    """docs/using.md: the code block — a heuristic in either env under `vmap` and `lax.scan` — run as it
    stands but for the env name, the heuristic and the sizes."""
    page = (Path(__file__).resolve().parents[1] / "docs/using.md").read_text()
    section = page.split("## The envs, their spaces and heuristics", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    for old, new in [('jaxsched.make("dbf")', f'jaxsched.make("{name}")'), ('"fcfs_easy"', f'"{heuristic}"'),
                     ("n_envs, n_steps = 16, 4000", "n_envs, n_steps = 4, 400")]:  # fmt: skip
        assert old in code, old
        code = code.replace(old, new)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    assert isinstance(
        scope["env"], {"dbf": HPCEnv, "das": GPUCloudEnv, "sced2": GPULocalityEnv}[name.split("-")[0]]
    )
    assert heuristic in heuristic_names(scope["env"]) and "random" in heuristic_names(scope["env"])
    assert scope["rewards"].shape == (400, 4) and np.isfinite(np.asarray(scope["rewards"])).all()
    printed = capsys.readouterr().out  # episodes end, and their metrics are printed
    ended = int(printed.split(" episodes ended")[0])
    assert ended == int(np.asarray(scope["done"]).sum()) >= 1 and "'steps': " in printed


@pytest.mark.parametrize("size", ["small", "medium", "large"])
def test_das_names_open_the_calibrated_presets(size):
    """`make("das-<size>")` is `configs/das/paper_<size>.yaml`'s cluster, workload law and contention."""
    from jaxsched.systems import load_run_config

    _, cfg = load_run_config(f"configs/das/paper_{size}.yaml")
    d = jaxsched.registered()[f"das-{size}"].defaults
    w, c, e = cfg.workload, cfg.cluster, cfg.env
    assert (d["n_jobs"], d["mean_interarrival_s"], d["interarrival_shape"]) == (
        w.n_jobs, w.mean_interarrival_s, w.interarrival_shape)  # fmt: skip
    assert (d["work_scale"], d["work_gpu_exponent"]) == (w.work_scale, w.work_gpu_exponent)
    assert d.get("size_tilt", 0.0) == w.size_tilt
    assert (d["kappa_net"], d["kappa_cpu"], d["kappa_spread"]) == (c.kappa_net, c.kappa_cpu, c.kappa_spread)
    assert (d["load_scale"], d["max_forward_events"], d["n_slots"]) == (
        e.load_scale, e.max_forward_events, e.n_slots)  # fmt: skip


def test_the_other_paper_names_open_the_calibrated_presets():
    """`sced2`, `dag-synthetic`, `osdec` and `osdec-realtime` carry their presets' fitted values."""
    from jaxsched.systems import load_run_config

    specs = jaxsched.registered()
    _, sced2 = load_run_config("configs/sced2/paper_68.yaml")
    d = specs["sced2"].defaults
    assert tuple(d["multi_gpu_weights"]) == sced2.workload.multi_gpu_weights
    assert (d["max_runtime"], d["slowdown_scale"]) == (sced2.workload.max_runtime, sced2.env.slowdown_scale)
    assert sced2.workload.multi_gpu_sizes == (2, 4, 8, 16, 32)
    _, dag = load_run_config("configs/dag/paper_synthetic.yaml")
    d = specs["dag-synthetic"].defaults
    assert (d["n_executors"], d["load"], d["max_tasks"]) == (
        dag.env.n_executors,
        dag.workload.load,
        dag.workload.max_tasks,
    )
    for name, path in (("osdec", "paper_table1"), ("osdec-realtime", "paper_realtime")):
        _, osdec = load_run_config(f"configs/osdec/{path}.yaml")
        d = specs[name].defaults
        w = osdec.workload
        assert (d["preset"], d["rate"], d["max_window"], d["max_lead"], d["amplitude"], d["noise"]) == (
            w.preset, w.rate, w.max_window, w.max_lead, w.amplitude, w.noise)  # fmt: skip
        assert (d["w_delay"], d["realtime"]) == (osdec.env.w_delay, w.realtime)


README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readmes_quick_start_runs_as_written(capsys):
    """The README's quick start, run as it stands: a line per heuristic, and back-filling's bounded slowdown
    below plain FCFS's."""
    code = README.read_text().split("## Quick start", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.strip().splitlines()) <= 12
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    lines = capsys.readouterr().out.strip().splitlines()
    bsld = {line.split(":")[0].strip(): float(line.split()[-1]) for line in lines}
    assert list(bsld) == ["fcfs", "sjf", "fcfs_easy"] and bsld["fcfs_easy"] < bsld["fcfs"], bsld


def test_the_readmes_first_screen_and_its_claims_column():
    """The pitch, the systems table and the two commands come first (within 50 lines); each system's claims
    cell is the tally of its claims in the stored records (`jaxsched claims`); no prose line over 120."""
    from jaxsched.experiments.claims import tally
    from jaxsched.systems import systems

    text = README.read_text()
    first = "\n".join(text.splitlines()[:50])
    assert "| system | paper | `make` |" in first and "## Two commands" in first
    assert "jaxsched demo" in first and "pytest -n 2 -q --nbmake tests notebooks" in first
    table = text.split("## Two commands")[0].splitlines()
    rows = [r for r in table if r.startswith("| ") and "(docs/results/" in r]
    cells = {r.split("(docs/results/")[1].split(".md)")[0]: r.rstrip(" |").split(" | ")[-1] for r in rows}
    declared = {k: s for k, s in systems().items() if s.claims is not None}
    assert set(cells) == set(declared)
    for kind, system in declared.items():
        assert cells[kind] == tally(system.claims(README.parent / "docs/results")), kind
    in_code = False
    for line in text.splitlines():
        in_code ^= line.startswith("```")
        if not in_code and not line.startswith(("|", "```")):
            assert len(line) <= 120, line
