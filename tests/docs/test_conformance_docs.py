"""docs/writing-a-backend.md shows the example backend exactly as it is in examples/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
GUIDE = ROOT / "docs" / "writing-a-backend.md"
EXAMPLE = ROOT / "examples" / "cubecl-example"


def _shown() -> dict[str, str]:
    text = GUIDE.read_text()
    pattern = re.compile(r"^### `(examples/[^`]+)`\n\n```\w*\n(.*?)^```$", re.S | re.M)
    return {m.group(1): m.group(2) for m in pattern.finditer(text)}


def test_every_example_file_is_in_the_guide_as_it_is() -> None:
    shown = _shown()
    files = sorted(str(p.relative_to(ROOT)) for p in EXAMPLE.rglob("*")
                   if p.is_file() and p.suffix in (".py", ".toml")
                   and "build" not in p.parts and ".egg-info" not in str(p))
    assert files and sorted(shown) == files
    for name in files:
        assert shown[name] == (ROOT / name).read_text(), f"{name} differs from the guide"


def test_guide_names_every_hook_of_the_specification() -> None:
    """The guide names every hook and leaves their specification to docs/hooks.md,
    which shows the hookspecs themselves (tests/plugins/test_plugins.py)."""
    from cubecl_server.plugins import hookspecs

    text = GUIDE.read_text()
    assert "docs/hooks.md" in text
    for name in hookspecs.__all__:
        if name.startswith("cubecl_server_"):
            assert f"`{name}`" in text, name
