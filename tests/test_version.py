"""customobj._version: the package version comes from the installed metadata, with the number of
pyproject.toml when the package was never installed."""
import importlib
import tomllib
from importlib import metadata
from pathlib import Path

import customobj
from customobj import _version


def test_version_is_the_installed_distribution_version():
    assert _version.__version__ == metadata.version("customobj") == customobj.__version__


def test_version_of_a_source_tree_never_installed(monkeypatch):
    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    try:
        importlib.reload(_version)
        pyproject = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
        assert _version.__version__ == pyproject["project"]["version"]  # the fallback follows the release
    finally:
        monkeypatch.undo()
        importlib.reload(_version)
    assert _version.__version__ == metadata.version("customobj")
