"""A SCIP constraint handler with no Python in the loop: g(x) <= 0 enforced by
outer-approximation cuts, g and its gradient evaluated through a cyxla bound call from
Cython callbacks that never take the GIL (docs/guide/solver.md)."""

from __future__ import annotations

import pyscipopt  # noqa: F401  (first: its SCIP library is the one the handler links)

from cyxla_scip.handler import error, evaluations, include_handler

__all__ = ["error", "evaluations", "include_handler"]
