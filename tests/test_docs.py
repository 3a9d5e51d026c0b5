"""docs/ladders.md matches the ladder records (regenerate: python -m kernelkit.docs > docs/ladders.md)."""
from pathlib import Path

from kernelkit.docs import ladders_markdown


def test_ladder_docs_are_current():
    path = Path(__file__).resolve().parent.parent / "docs" / "ladders.md"
    assert path.read_text() == ladders_markdown(), "stale: run `python -m kernelkit.docs > docs/ladders.md`"
