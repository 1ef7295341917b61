"""Lines of a test file marked with a comment, where a test expects an error to point."""

from __future__ import annotations

from pathlib import Path


def marked_line(file: str, tag: str) -> int:
    """The one line of ``file`` that ends with the comment ``# <tag>``: where a test
    expects an error to point."""
    hits = [no for no, text in enumerate(Path(file).read_text().splitlines(), 1)
            if text.rstrip().endswith(f"# <{tag}>")]
    assert len(hits) == 1, (file, tag, hits)
    return hits[0]
