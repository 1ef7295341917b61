"""Fixture plugin that cannot be imported."""

raise ImportError("fixture plugin cannot be imported")
