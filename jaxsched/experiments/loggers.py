"""Where a training run's metrics go besides `metrics.jsonl` (always written): `train --logger tensorboard`
and/or `--logger wandb` (the config's top-level `loggers:` list).

    loggers = open_loggers(("tensorboard",), run_dir, "dbf_quick", cfg.to_dict())
    loggers.log(records)             # after each chunk: its metrics.jsonl records
    loggers.figure(run_dir / "learning_curve.png")
    loggers.close()

Each record's metrics are one value per seed: a logger gets `<metric>/seed<i>` for each seed and
`<metric>/mean` over the seeds that have a value (an episode metric is null in an update where no episode
ended), at step = the update.

- `tensorboard`: event files in `RUN_DIR/tensorboard/`, written here (TFRecord framing, the protobuf
  messages encoded by hand: no TensorFlow, PyTorch or tensorboardX): the scalars, the config as TensorBoard's
  hyper-parameters (the HParams dashboard) and as text, the learning-curve PNG as an image. Read them
  with `tensorboard --logdir RUN_DIR/tensorboard` (`pip install tensorboard`).
- `wandb`: Weights & Biases (`pip install wandb`), offline unless `WANDB_MODE` says otherwise; the run
  lives in `RUN_DIR/wandb/` (`wandb sync` uploads it).
"""

from __future__ import annotations

import math
import os
import socket
import struct
import time
from pathlib import Path

import yaml

LOGGERS = ("jsonl", "tensorboard", "wandb")  # jsonl: metrics.jsonl, always written
TENSORBOARD_DIR = "tensorboard"


def check_loggers(names) -> tuple[str, ...]:
    """`names` as a tuple, each one of `LOGGERS` (a one-line error otherwise)."""
    names = (names,) if isinstance(names, str) else tuple(names)
    for n in names:
        if n not in LOGGERS:
            raise ValueError(f"loggers: unknown logger {n!r} (one of {', '.join(LOGGERS)})")
    return names


def scalars(record: dict) -> dict[str, float]:
    """`{"<metric>/seed<i>": v, "<metric>/mean": mean}` of one `metrics.jsonl` record (per-seed lists; nulls,
    an update without an ended episode, left out)."""
    out = {}
    for key, value in record.items():
        if key == "update":
            continue
        values = value if isinstance(value, list) else [value]
        kept = [float(v) for v in values if v is not None and math.isfinite(float(v))]
        if isinstance(value, list):
            out |= {f"{key}/seed{i}": float(v) for i, v in enumerate(values) if v is not None}
        if kept:
            out[f"{key}/mean"] = sum(kept) / len(kept)
    return out


def flat_config(config: dict, prefix: str = "") -> dict[str, float | str | bool]:
    """A config mapping as dotted keys with scalar values (lists written as text): hyper-parameters."""
    out = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out |= flat_config(value, name + ".")
        elif isinstance(value, bool | int | float | str):
            out[name] = value
        elif value is not None:
            out[name] = str(value)
    return out


class RunLoggers:
    """The loggers of one run, called together (`open_loggers`)."""

    def __init__(self, loggers: list):
        self.loggers = loggers

    def log(self, records: list[dict]) -> None:
        for logger in self.loggers:
            logger.log(records)

    def figure(self, png: Path) -> None:
        if Path(png).exists():  # a run stopped before its curve was drawn has none
            for logger in self.loggers:
                logger.figure(Path(png))

    def close(self) -> None:
        for logger in self.loggers:
            logger.close()


def open_loggers(names, run_dir: Path, name: str, config: dict) -> RunLoggers:
    """The loggers `names` (of `LOGGERS`; `jsonl` is the trainer's own file and needs none) of the run
    `name` in `run_dir`, each given the run's config."""
    opened = []
    for n in check_loggers(names):
        if n == "tensorboard":
            opened.append(TensorBoardLogger(Path(run_dir) / TENSORBOARD_DIR, config))
        elif n == "wandb":
            opened.append(WandbLogger(Path(run_dir), name, config))
    return RunLoggers(opened)


# ---- TensorBoard -----------------------------------------------------------------------------------------
class TensorBoardLogger:
    """One event file in `log_dir`: the config as hyper-parameters and text at creation, scalars per record,
    images by `figure`."""

    def __init__(self, log_dir: Path, config: dict):
        log_dir.mkdir(parents=True, exist_ok=True)
        self.path = log_dir / f"events.out.tfevents.{time.time():.6f}.{socket.gethostname()}.jaxsched"
        self._file = self.path.open("ab")
        self._write(_event(file_version="brain.Event:2"))
        hparams = flat_config(config)
        self._write(_event(summary=_summary_value(
            "_hparams_/session_start_info", metadata=_plugin("hparams", _session_start(hparams)),
            tensor=_string_tensor(b""),
        )))  # fmt: skip
        text = yaml.safe_dump(config, sort_keys=False).encode()
        config_text = _summary_value("config", metadata=_plugin("text"), tensor=_string_tensor(text))
        self._write(_event(summary=config_text))
        self._file.flush()

    def log(self, records: list[dict]) -> None:
        for record in records:
            values = b"".join(_summary_value(k, simple_value=v) for k, v in scalars(record).items())
            self._write(_event(step=int(record["update"]), summary=values))
        self._file.flush()

    def figure(self, png: Path) -> None:
        data = png.read_bytes()
        width, height = struct.unpack(">II", data[16:24])  # the PNG's IHDR chunk
        # Summary.Image: height (1), width (2), colorspace (3: 4 = RGBA), encoded_image_string (4)
        image = _field_varint(1, height) + _field_varint(2, width) + _field_varint(3, 4)
        image += _field_bytes(4, data)
        value = _field_bytes(1, png.stem.encode()) + _field_bytes(4, image)  # Value: tag (1), image (4)
        self._write(_event(summary=_field_bytes(1, value)))
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def _write(self, event: bytes) -> None:
        header = struct.pack("<Q", len(event))
        crcs = struct.pack("<I", _masked_crc(header)), struct.pack("<I", _masked_crc(event))
        self._file.write(header + crcs[0] + event + crcs[1])


# protobuf wire format, by hand: field numbers of tensorboard/compat/proto/{event,summary,tensor}.proto
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        bits, n = n & 0x7F, n >> 7
        out.append(bits | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field_varint(field: int, n: int) -> bytes:
    return _varint(field << 3) + _varint(n)


def _field_bytes(field: int, data: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _event(step: int = 0, file_version: str | None = None, summary: bytes | None = None) -> bytes:
    """An `Event`: wall_time (1, double), step (2), file_version (3) or summary (5: its `Value`s)."""
    out = _varint(1 << 3 | 1) + struct.pack("<d", time.time()) + _field_varint(2, step)
    if file_version is not None:
        out += _field_bytes(3, file_version.encode())
    if summary is not None:
        out += _field_bytes(5, summary)
    return out


def _summary_value(tag: str, simple_value: float | None = None, metadata: bytes | None = None,
                   tensor: bytes | None = None) -> bytes:  # fmt: skip
    """One `Summary.value` entry (Summary field 1): tag (1), simple_value (2, float), tensor (8),
    metadata (9)."""
    value = _field_bytes(1, tag.encode())
    if simple_value is not None:
        value += _varint(2 << 3 | 5) + struct.pack("<f", simple_value)
    if tensor is not None:
        value += _field_bytes(8, tensor)
    if metadata is not None:
        value += _field_bytes(9, metadata)
    return _field_bytes(1, value)


def _plugin(name: str, content: bytes = b"") -> bytes:
    """`SummaryMetadata` with plugin_data (1) {plugin_name (1), content (2)}."""
    return _field_bytes(1, _field_bytes(1, name.encode()) + (_field_bytes(2, content) if content else b""))


def _string_tensor(data: bytes) -> bytes:
    """A scalar string `TensorProto`: dtype DT_STRING (1: 7), an empty shape (2), string_val (8)."""
    return _field_varint(1, 7) + _field_bytes(2, b"") + _field_bytes(8, data)


def _session_start(hparams: dict) -> bytes:
    """`HParamsPluginData` (hparams plugin_data.proto) holding session_start_info (3) {hparams (1): map of
    `google.protobuf.Value` (number 2, string 3, bool 4)}."""
    entries = b""
    for key, value in hparams.items():
        if isinstance(value, bool):
            v = _field_varint(4, int(value))
        elif isinstance(value, int | float):
            v = _varint(2 << 3 | 1) + struct.pack("<d", float(value))
        else:
            v = _field_bytes(3, str(value).encode())
        entries += _field_bytes(1, _field_bytes(1, key.encode()) + _field_bytes(2, v))
    return _field_bytes(3, entries + _varint(5 << 3 | 1) + struct.pack("<d", time.time()))


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def _masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC-32C (Castagnoli) of `data`."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# ---- Weights & Biases ------------------------------------------------------------------------------------
class WandbLogger:
    """A W&B run in `run_dir/wandb/`, offline unless `WANDB_MODE` is set (`wandb sync` uploads it)."""

    def __init__(self, run_dir: Path, name: str, config: dict):
        try:
            import wandb
        except ImportError as err:
            raise ImportError("--logger wandb needs wandb: pip install wandb") from err
        self._wandb = wandb
        self._run = wandb.init(
            project=os.environ.get("WANDB_PROJECT", "jaxsched"), name=name, dir=str(run_dir),
            config=config, mode=os.environ.get("WANDB_MODE", "offline"),
        )  # fmt: skip

    def log(self, records: list[dict]) -> None:
        for record in records:
            self._run.log(scalars(record), step=int(record["update"]))

    def figure(self, png: Path) -> None:
        self._run.log({png.stem: self._wandb.Image(str(png))})

    def close(self) -> None:
        self._run.finish()
