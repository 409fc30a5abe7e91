"""One version: the package's (core/version.py: `accept-order --version`, what a result file records) is the one
pyproject.toml installs, so a file never says a version other than the tool that wrote it."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from accept_order.core.version import VERSION
from accept_order.results.envelope import tool_version

ROOT = Path(__file__).resolve().parent.parent


def test_pyproject_says_the_packages_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["version"] == VERSION


def test_a_file_records_it_and_so_does_the_installed_package() -> None:
    assert tool_version() == VERSION == metadata.version("accept-order")
