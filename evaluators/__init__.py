"""Evaluators (installed as matbench.evaluators). Importing this package registers them."""

from matbench.evaluators.base import EVALUATORS, Evaluator, arm_metrics
from matbench.evaluators import access, discovery, landing, programming, trigger, update  # noqa: F401  (registers the suites)

__all__ = ["EVALUATORS", "Evaluator", "arm_metrics"]
