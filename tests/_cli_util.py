"""Shared by the CLI tests: run the command in-process, and keep the user's persistent cache out."""

import pytest

from jaxdp import cli


@pytest.fixture(autouse=True)
def _no_persistent_cache(monkeypatch):
    monkeypatch.setenv("JAXDP_CACHE_DIR", "off")


def run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err
