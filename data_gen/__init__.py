"""Suite generators (installed as matbench.data_gen). Importing this package registers them."""

from matbench.data_gen.base import SUITES, Suite
from matbench.data_gen import access, discovery, landing, programming, trigger, update  # noqa: F401  (registers the suites)

__all__ = ["SUITES", "Suite"]
