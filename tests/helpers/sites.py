"""Backends installed as distributions for a fresh process: a site directory, with a
hand-written ``.dist-info``, to put on its ``PYTHONPATH``."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers.processes import TESTS

WRONG_BACKENDS = TESTS / "conformance" / "wrong_backends"
"""The deliberately wrong backends, one fault each (its README says which)."""


def wrong_backend_site(root: Path, module: str, dist: str,
                       hooks: dict[str, str] | None = None) -> Path:
    """A site directory installing ``module`` of ``tests/conformance/wrong_backends``
    as the distribution ``dist``; ``hooks`` (backend -> module) become entry points of
    the group ``cubecl_server.conformance``."""
    site = root / "site"
    site.mkdir()
    for name in [module, "cubecl_wrong_common", *(hooks or {}).values()]:
        shutil.copy(WRONG_BACKENDS / f"{name}.py", site)
    info = site / f"{dist.replace('-', '_')}-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.0.1\n")
    entry_points = f"[cubecl_server]\n{module} = {module}\n"
    if hooks:
        entry_points += "[cubecl_server.conformance]\n" + "".join(
            f"{backend} = {name}\n" for backend, name in hooks.items())
    (info / "entry_points.txt").write_text(entry_points)
    (info / "top_level.txt").write_text(f"{module}\n")
    return site
