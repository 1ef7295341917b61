"""Backends built into cubecl-server."""
