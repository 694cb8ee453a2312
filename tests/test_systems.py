"""The registry of systems and the shared strict loader: `kind:` picks the system, every shipped config
loads as the system of its folder, and the loader's errors are one line naming the file (or `--set`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from jaxsched.cli import main
from jaxsched.experiments.config import ExperimentConfig
from jaxsched.experiments.paper import paper_rows
from jaxsched.experiments.system import System
from jaxsched.systems import get_system, load_run_config, systems

ROOT = Path(__file__).resolve().parents[1]


def test_every_shipped_config_loads_as_the_system_of_its_folder():
    configs = sorted((ROOT / "configs").glob("*/*.yaml"))
    assert {p.parent.name for p in configs} == set(systems())  # a folder per registered kind, no other
    for path in configs:
        system, cfg = load_run_config(path)
        assert system.kind == cfg.kind == path.parent.name, path
        assert isinstance(cfg, system.config) and cfg.name


def test_a_system_declares_what_the_shared_layer_needs():
    for kind, system in systems().items():
        assert isinstance(system, System) and system.kind == kind
        assert issubclass(system.config, ExperimentConfig) and system.config.KIND == kind
        assert system.config().kind == kind  # every default is valid
        assert system.baselines and system.metrics and callable(system.train) and callable(system.evaluate)
        assert len({m.key for m in system.metrics}) == len(system.metrics)
        sections = system.config.sections()
        assert sections and all(dataclasses.is_dataclass(v) for v in sections.values())
        for module in system.commands.values():
            assert callable(module.add_arguments) and callable(module.run_from_args) and module.HELP
    # published numbers come from paper_numbers.csv, the one file the tables and the calibration read
    das = paper_rows(
        get_system("das").calibration.numbers, "Table 1", [("small", "avg_jct_min"), ("small", "avg_fee")]
    )
    assert das["tetris"] == (813.480, 51.668) and das["das"] == (638.046, 50.484)
    with pytest.raises(ValueError, match=f"unknown system 'sced3'; choose from {', '.join(systems())}$"):
        get_system("sced3")


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "the file is empty; a config needs at least `kind:` (dbf, das, sced2, dag, osdec)"),
        ("name: x\n", "no `kind:`; a config says which system it is: kind: dbf | das"),
        ("kind: sced\n", "kind 'sced'; a config says which system it is: kind: dbf | das"),
        ("- 1\n- 2\n", "a config must be a mapping of keys to values, got list"),
        ("kind: das\nenv:\n  n_slot: 4\n", "unknown key 'env.n_slot' (did you mean 'env.n_slots'?)"),
        ("kind: dbf\nenv:\n  n_slots: 4\n", "unknown key 'env.n_slots' (valid keys here:"),
        ("kind: das\nmappo:\n  agent: {}\n", "mappo.agent is not a setting: the networks are set"),
        ("kind: dbf\nnum_seeds: two\n", "num_seeds must be an integer, got 'two'"),
    ],
)
def test_loader_errors_name_the_file_and_the_key(tmp_path, text, message):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        load_run_config(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_set_errors_name_set(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text("kind: dbf\n")
    with pytest.raises(ValueError, match="^--set: override 'env.tail' must look like KEY=VALUE"):
        load_run_config(path, ["env.tail"])
    with pytest.raises(ValueError, match="^--set: override 'seed=2': key 'seed' is already set by 'seed=1'"):
        load_run_config(path, ["seed=1", "seed=2"])
    assert load_run_config(path, ["kind=das"])[0].kind == "das"  # --set may pick the system too
    assert main(["train", str(path), "--set", "ppo.lr"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jaxsched train: error: --set: ") and err.count("\n") == 1


def test_cli_dispatches_table_per_system(capsys):
    """`table KIND` runs the system's own `table` module with its own arguments (every system has one); a
    kind that is none is refused with the choices named."""
    with pytest.raises(SystemExit):
        main(["table", "dbf"])  # DBF's table is the split sweep over run directories
    assert "jaxsched table dbf: error: the following arguments are required: runs, --out" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        main(["table", "osdec"])
    assert "jaxsched table osdec: error: the following arguments are required: configs, --out" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        main(["table", "sced3"])
    err = capsys.readouterr().err
    assert "invalid choice: 'sced3'" in err and all(k in err for k in systems())
