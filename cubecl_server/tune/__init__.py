"""Autotune: run the fastest of several candidates for each kind of input, found once
per device and kept in the environment's store (``docs/tuning.md``).

A :class:`Tunable` is one candidate (a function of the inputs that launches kernels);
a :class:`TunableSet` holds the candidates, the autotune key of the inputs and how
to make inputs to time them on; :func:`local_tuner` gives the process's tuner of a
name, which runs the winner for each key and tunes on a miss. ``CUBECL_AUTOTUNE``
(``on``, ``off``, ``force``) says whether to tune; ``cubecl-server tune ls`` shows
what was chosen and why.
"""

from cubecl_server.persistence.tune_cache import TuneEntry
from cubecl_server.tune.tunable import (
    KernelSpec,
    Tunable,
    TunableSet,
    anchor,
    copy_inputs,
    key_text,
)
from cubecl_server.tune.tuner import AutotuneError, LocalTuner, Tuner, TuneRecord, local_tuner

__all__ = [
    "AutotuneError", "KernelSpec", "LocalTuner", "TuneEntry", "TuneRecord", "Tunable",
    "TunableSet", "Tuner", "anchor", "copy_inputs", "key_text", "local_tuner",
]
