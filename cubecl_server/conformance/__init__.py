"""The conformance suite: one pytest plugin every backend runs against itself.

It does nothing unless asked. A backend's test run includes the whole suite with::

    pytest -p cubecl_server.conformance --cubecl-backend NAME

or, once, in the backend's ``pyproject.toml``::

    [tool.pytest.ini_options]
    addopts = "-p cubecl_server.conformance --cubecl-backend NAME"

(``pytest_plugins = ["cubecl_server.conformance"]`` in a top-level ``conftest.py``
with the ini value ``cubecl_backend = NAME`` works too), and a user checks an
installed backend with ``cubecl-server conformance NAME``. The suite's modules live
in :mod:`cubecl_server.conformance.suite` and are added to the run as they are, so a
test added to the suite reaches every backend. ``docs/writing-a-backend.md``
explains capabilities, expected failures and how to read a failure.
"""

from cubecl_server.conformance.plugin import (
    HOOKS_GROUP,
    SUITE_DIR,
    Subject,
    cubecl_backend,
    cubecl_client,
    cubecl_isolated,
    cubecl_rng,
    cubecl_seed,
    cubecl_subject,
    missing_capability,
    pytest_addhooks,
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_report_header,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_terminal_summary,
    subject,
)

__all__ = [
    "HOOKS_GROUP", "SUITE_DIR", "Subject", "cubecl_backend", "cubecl_client", "cubecl_isolated",
    "cubecl_rng", "cubecl_seed", "cubecl_subject", "missing_capability", "pytest_addhooks",
    "pytest_addoption", "pytest_collection_modifyitems", "pytest_configure",
    "pytest_report_header", "pytest_runtest_makereport", "pytest_runtest_setup",
    "pytest_terminal_summary", "subject",
]
