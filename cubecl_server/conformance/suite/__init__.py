"""The conformance suite's test modules.

Collected only through the plugin (:mod:`cubecl_server.conformance`), which adds
them to a run that names a backend; every test reaches the backend through the
plugin's fixtures (``cubecl_client``, ``cubecl_rng``...).
"""
