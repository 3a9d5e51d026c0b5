"""Every public op documents itself fully, and nothing a user reads points at outside numbering.

A docstring states the op's semantics, its dtypes, every argument by name (``out``, ``variant`` and
``config`` included, or that there is no ``out``), and the errors it raises; `kernelkit ops` shows
the ladder records' one-line docs.
"""
import inspect
import re
from pathlib import Path

import pytest

import kernelkit

ROOT = Path(__file__).resolve().parent.parent
OPS = [name for name in kernelkit.__all__ if name in kernelkit.ops()]
DTYPE_WORDS = ("float32", "float16", "bfloat16", "uint8", "any dtype")
# a source, issue, recording or pull-request number: numbering that only an outside document resolves
OUTSIDE = re.compile(r"\b(sources?|issues?|sess" r"ions?|PR)\s*#?\d+", re.I)


def test_every_op_in_the_api_is_checked():
    assert set(OPS) == set(kernelkit.ops())


@pytest.mark.parametrize("name", OPS)
def test_public_op_docstring_is_complete(name):
    fn = getattr(kernelkit, name)
    doc = inspect.getdoc(fn) or ""
    assert len(doc.splitlines()) >= 8, f"{name}: a docstring of several lines, not {len(doc.splitlines())}"
    for param in inspect.signature(fn).parameters:
        assert f"``{param}``" in doc, f"{name}: the docstring does not name ``{param}``"
    assert "``out``" in doc, f"{name}: say what ``out`` is, or that there is none"
    assert f'kernelkit.ladder("{name}")' in doc, f"{name}: ``variant`` should point at its ladder"
    assert any(w in doc for w in DTYPE_WORDS), f"{name}: the dtypes it takes"
    assert "Raises" in doc and "TypeError" in doc and "ValueError" in doc, f"{name}: the errors it raises"
    assert "for tuning and tests" in doc, f"{name}: ``config`` as the documented tuning surface"


@pytest.mark.parametrize("name", OPS)
def test_no_outside_numbering_in_what_users_read(name):
    op = kernelkit.get_op(name)
    texts = [inspect.getdoc(getattr(kernelkit, name)) or "", op.doc, *(v.technique for v in op.variants)]
    for text in texts:
        assert not OUTSIDE.search(text), f"{name}: {OUTSIDE.search(text).group(0)!r} in {text!r}"


def test_no_outside_numbering_in_docs_and_readme():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = [f"{f.relative_to(ROOT)}:{i}: {line.strip()}" for f in files
             for i, line in enumerate(f.read_text().splitlines(), 1) if OUTSIDE.search(line)]
    assert not found, "\n".join(found)
