"""`experiments.loggers`: the per-seed and mean scalars of a metrics record, the config as flat
hyper-parameters, TensorBoard's event framing (its CRC), a W&B run driven through wandb's API (a stand-in
module: wandb is not a dependency), and one-line errors for an unknown logger."""

from __future__ import annotations

import struct
import sys
import types

import pytest

from jaxsched.experiments.config import config_from_dict
from jaxsched.experiments.loggers import _masked_crc, check_loggers, flat_config, open_loggers, scalars
from jaxsched.systems.dbf.config import DBFConfig


def test_scalars_per_seed_and_the_mean_of_the_seeds_that_have_one():
    record = {"update": 3, "env_steps": 96, "loss": [0.5, 0.7], "avg_bsld": [None, 3.0], "wall_s": 1.5}
    assert scalars(record) == {
        "env_steps/mean": 96.0, "loss/seed0": 0.5, "loss/seed1": 0.7, "loss/mean": 0.6,
        "avg_bsld/seed1": 3.0, "avg_bsld/mean": 3.0, "wall_s/mean": 1.5,
    }  # fmt: skip
    assert scalars({"update": 1, "x": [None, None]}) == {}


def test_flat_config_dotted_scalars():
    ppo = {"lr": 1e-3, "hidden": [64, 64], "anneal": True, "net": {"depth": 2}}
    cfg = {"name": "a", "ppo": ppo, "x": None}
    assert flat_config(cfg) == {
        "name": "a",
        "ppo.lr": 1e-3,
        "ppo.hidden": "[64, 64]",
        "ppo.anneal": True,
        "ppo.net.depth": 2,
    }


def test_masked_crc32c_of_known_values():
    """CRC-32C check values (RFC 3720's test vector: 32 zero bytes → 0x8A9136AA), then TFRecord's mask."""
    crc = 0x8A9136AA
    assert _masked_crc(bytes(32)) == (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    assert _masked_crc(b"123456789") == (((0xE3069283 >> 15) | (0xE3069283 << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_tensorboard_records_are_framed_with_their_lengths_and_crcs(tmp_path):
    loggers = open_loggers(["tensorboard"], tmp_path, "run", {"name": "run"})
    loggers.log([{"update": 1, "loss": [1.0]}])
    loggers.close()
    (path,) = (tmp_path / "tensorboard").iterdir()
    data, records = path.read_bytes(), 0
    while data:
        (n,) = struct.unpack("<Q", data[:8])
        assert struct.unpack("<I", data[8:12])[0] == _masked_crc(data[:8])
        assert struct.unpack("<I", data[12 + n : 16 + n])[0] == _masked_crc(data[12 : 12 + n])
        data, records = data[16 + n :], records + 1
    assert records == 4  # file version, hyper-parameters, config text, one update


def test_wandb_gets_the_config_each_update_and_the_figure(tmp_path, monkeypatch):
    calls = []

    class Run:
        def log(self, values, step=None):
            calls.append(("log", values, step))

        def finish(self):
            calls.append(("finish",))

    fake = types.SimpleNamespace(
        init=lambda **kw: calls.append(("init", kw)) or Run(), Image=lambda path: ("image", path)
    )
    monkeypatch.setitem(sys.modules, "wandb", fake)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    loggers = open_loggers(["wandb"], tmp_path, "dbf_quick", {"ppo": {"lr": 0.1}})
    loggers.log([{"update": 2, "loss": [1.0, 3.0]}])
    png = tmp_path / "learning_curve.png"
    png.write_bytes(b"png")
    loggers.figure(png)
    loggers.close()
    init = calls[0][1]
    assert init["mode"] == "offline" and init["config"] == {"ppo": {"lr": 0.1}}
    assert init["name"] == "dbf_quick" and init["dir"] == str(tmp_path)
    assert calls[1] == ("log", {"loss/seed0": 1.0, "loss/seed1": 3.0, "loss/mean": 2.0}, 2)
    assert calls[2] == ("log", {"learning_curve": ("image", str(png))}, None) and calls[3] == ("finish",)


def test_wandb_missing_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # an import of it fails
    with pytest.raises(ImportError, match=r"--logger wandb needs wandb: pip install wandb"):
        open_loggers(["wandb"], tmp_path, "run", {})


def test_unknown_logger_names_the_key():
    one_of = r"\(one of jsonl, tensorboard, wandb\)"
    with pytest.raises(ValueError, match=r"loggers: unknown logger 'tb' " + one_of):
        check_loggers(["tb"])
    with pytest.raises(ValueError, match=r"loggers: unknown logger 'mlflow'"):
        config_from_dict(DBFConfig, {"loggers": ["mlflow"]})
    assert config_from_dict(DBFConfig, {"loggers": ["tensorboard"]}).loggers == ("tensorboard",)
