"""What the core's tests share, importable from every test folder (``tests/`` is on
``sys.path``: ``pyproject.toml``'s ``pythonpath``, and ``run_python`` gives it to the
fresh interpreters it starts). Test modules import from here, never from ``conftest``
or from one another."""
