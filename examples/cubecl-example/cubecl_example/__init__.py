"""cubecl-example: a small cubecl-server backend named ``example``."""

__version__ = "0.1.0"
