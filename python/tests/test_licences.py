"""The installed package says truthfully what it is licensed under: its metadata (PEP 639's
License-Expression and License-File) names cugym's MIT licence and the GPL-3.0 of the MinAtar plugin
it ships, both licence files are installed, and each loaded plugin declares a licence that the
expression covers."""

from importlib import metadata

import cugym

EXPRESSION = "MIT AND GPL-3.0-only"


def test_the_metadata_names_every_licence():
    meta = metadata.metadata("cugym")
    assert meta["License-Expression"] == EXPRESSION
    files = meta.get_all("License-File") or []
    assert "LICENSE" in files and "plugins/minatar/LICENSE" in files, files
    dist = metadata.distribution("cugym")
    texts = {name: dist.read_text(f"licenses/{name}") for name in files}
    assert "MIT License" in texts["LICENSE"]
    assert "GNU GENERAL PUBLIC LICENSE" in texts["plugins/minatar/LICENSE"]
    assert "Version 3" in texts["plugins/minatar/LICENSE"]


def test_every_loaded_plugin_declares_a_licence_the_metadata_covers():
    shipped = [p for p in cugym.plugins() if p["path"].endswith("libcugym_minatar.so")]
    if "MinAtar-Breakout-v1" in cugym.env_ids():
        assert len(shipped) == 1
        assert shipped[0]["license"] == "GPL-3.0-only"
        assert "MinAtar-Breakout-v1" in shipped[0]["ids"]
        assert "MinAtar-Breakout-v1:full_action_space" not in shipped[0]["ids"]
    for plugin in shipped:
        assert plugin["license"] in EXPRESSION.split(" AND ")
    assert cugym._cugym.env_license("CartPole-v1") == "MIT"
