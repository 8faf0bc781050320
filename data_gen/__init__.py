"""Suite generators (installed as matbench.data_gen). Importing this package registers them."""

from matbench.data_gen import (  # noqa: F401  (registers the suites)
    access,
    binding_capacity,
    decoy_audit,
    discovery,
    edge_swap,
    harvest,
    harvest_freeform,
    landing,
    note_knob,
    orthogonal_bits,
    phantom_erase,
    phantom_swap,
    programming,
    recompute_matrix,
    reference_gradient,
    sink_dependency,
    sliding_window,
    trigger,
    update,
    var_tracking,
)
from matbench.data_gen.base import SUITES, Suite

__all__ = ["SUITES", "Suite"]
