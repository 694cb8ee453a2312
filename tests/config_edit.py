"""A shipped YAML config as a dict with some sections changed, for the system tests."""

from __future__ import annotations

from pathlib import Path

import yaml


def config_with(path: Path, **sections) -> dict:
    """The config at `path` as a dict; a dict value updates that section key by key, any other value
    replaces the top-level key."""
    d = yaml.safe_load(Path(path).read_text())
    for key, value in sections.items():
        d.setdefault(key, {}).update(value) if isinstance(value, dict) else d.__setitem__(key, value)
    return d
