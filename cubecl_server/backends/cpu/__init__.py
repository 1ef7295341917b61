"""The built-in ``cpu`` backend: kernels lowered to vectorised NumPy Python source."""
