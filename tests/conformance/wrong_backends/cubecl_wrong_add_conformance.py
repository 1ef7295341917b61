"""The conformance hooks of backend ``wrong_add``: its fault, declared as expected."""

from __future__ import annotations

import pytest


def pytest_cubecl_expected_failures(config: pytest.Config, backend: str) -> dict[str, str]:
    """Every addition test: ``wrong_add`` adds one more."""
    return {"test_language.py::TestBinary::test_arith[add-*": "a + b is a + b + 1 here"}
