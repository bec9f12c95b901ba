"""The solver guide's problem (docs/guide/solver.md) and larger ones of its kind: minimise
a linear cost over the integer points of a box subject to a convex g(x) <= 0, a ball bent
by a softplus term. Each builds a PySCIPOpt model whose constraint is enforced by the
Cython handler (`include_handler`) or by the guide's Python handler, and has its optimum
by enumeration, the oracle both are checked against."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax

jax.config.update("jax_enable_x64", True)  # SCIP works in double precision

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from pyscipopt import SCIP_RESULT, Conshdlr, Model, quicksum  # noqa: E402

import cyxla  # noqa: E402
from cyxla_scip.handler import evaluations, include_handler  # noqa: E402

__all__ = ["GUIDE", "Problem", "PythonHandler", "larger", "result"]


@dataclass(frozen=True, eq=False)
class Problem:
    """min COST . x over integers x in [-bound, bound]^n subject to g(x) <= 0, where
    g(x) = |x - center|^2 / 2 + softplus(weights . x) - radius."""

    center: np.ndarray
    weights: np.ndarray
    cost: np.ndarray
    radius: float
    bound: int

    @functools.cached_property
    def executable(self) -> cyxla.Executable:
        """jax.value_and_grad(g), compiled: float64[n] -> (float64[], float64[n])."""
        spec = jax.ShapeDtypeStruct((self.n,), np.float64)
        return cyxla.compile_program(cyxla.lower(jax.value_and_grad(self.g), [spec]))[0]

    @property
    def n(self) -> int:
        return len(self.center)

    def g(self, x: jax.Array) -> jax.Array:
        """The constraint function: x is feasible where g(x) <= 0."""
        return (
            0.5 * jnp.sum((x - self.center) ** 2) + jax.nn.softplus(self.weights @ x) - self.radius
        )

    def model(self, handler: str) -> tuple[Model, list[Any], Callable[[], int]]:
        """The problem as a model (output hidden) whose constraint g(x) <= 0 is enforced
        by `handler`, "cython" (include_handler: no Python in the loop) or "python"
        (PythonHandler, which the model keeps alive); its variables; and a function that
        says how many evaluations of g the handler made."""
        m = Model()
        m.hideOutput()
        x = [m.addVar(f"x{i}", vtype="I", lb=-self.bound, ub=self.bound) for i in range(self.n)]
        m.setObjective(quicksum(float(c) * v for c, v in zip(self.cost, x, strict=True)))
        if handler == "cython":
            include_handler(m, x, self.executable, name="jax")
            return m, x, lambda: evaluations(m)
        if handler == "python":
            python_handler = PythonHandler(x, self.executable.run)
            m.includeConshdlr(python_handler, "jax", "g(x) <= 0 by outer approximation",
                              enfopriority=-10, chckpriority=-10)  # fmt: skip
            m.addPyCons(m.createCons(python_handler, "g"))
            return m, x, lambda: python_handler.evaluations
        raise ValueError(f"handler must be 'cython' or 'python', given {handler!r}")

    def brute_force(self) -> tuple[float, np.ndarray]:
        """The optimum over all integer points of the box, and its point."""
        axis = range(-self.bound, self.bound + 1)
        points = np.array(list(itertools.product(axis, repeat=self.n)), dtype=np.float64)
        feasible = points[np.asarray(jax.vmap(self.g)(points)) <= 0]
        best = feasible[np.argmin(feasible @ self.cost)]
        return float(best @ self.cost), best.astype(int)


def result(m: Model, x: list[Any]) -> tuple[float, np.ndarray]:
    """The optimum of a solved model and its point."""
    assert m.getStatus() == "optimal", m.getStatus()
    return m.getObjVal(), np.array([round(m.getVal(v)) for v in x])


#: The guide's problem: three variables in [-4, 4].
GUIDE = Problem(
    center=np.array([1.3, -0.7, 2.2]),
    weights=np.array([0.5, -1.0, 0.3]),
    cost=np.array([-1.0, 2.0, -1.0]),
    radius=4.0,
    bound=4,
)


def larger(n: int = 6, bound: int = 5, seed: int = 1) -> Problem:
    """A problem of the guide's kind with n variables in [-bound, bound]: more nodes and
    evaluations (n = 6: about 1,400 nodes and 2,400 evaluations)."""
    rng = np.random.default_rng(seed)
    return Problem(
        center=rng.uniform(-bound / 2, bound / 2, n),
        weights=rng.uniform(-1, 1, n),
        cost=rng.uniform(-2, 2, n),
        radius=0.35 * n,
        bound=bound,
    )


class PythonHandler(Conshdlr):
    """The guide's handler: the same cuts, in Python; `evaluate` maps x to (g(x), its
    gradient) (Executable.run)."""

    def __init__(self, variables: list[Any], evaluate: Callable[[list[np.ndarray]], Any]) -> None:
        self.variables = variables
        self.evaluate = evaluate
        self.tolerance = 1e-6
        self.evaluations = 0

    def value_and_gradient(self, solution: Any = None) -> tuple[float, np.ndarray, np.ndarray]:
        x = np.array([self.model.getSolVal(solution, v) for v in self.variables])
        self.evaluations += 1
        value, gradient = self.evaluate([x])
        return float(value), gradient, x

    def conscheck(self, constraints, solution, checkintegrality, checklprows, printreason,
                  completely):  # fmt: skip
        value, _, _ = self.value_and_gradient(solution)
        feasible = value <= self.tolerance
        return {"result": SCIP_RESULT.FEASIBLE if feasible else SCIP_RESULT.INFEASIBLE}

    def enforce(self) -> dict[str, Any]:
        value, gradient, x = self.value_and_gradient()
        if value <= self.tolerance:
            return {"result": SCIP_RESULT.FEASIBLE}
        cut = quicksum(float(d) * v for d, v in zip(gradient, self.variables, strict=True))
        self.model.addCons(cut <= float(gradient @ x - value))
        return {"result": SCIP_RESULT.CONSADDED}

    def consenfolp(self, constraints, nusefulconss, solinfeasible):  # fmt: skip
        return self.enforce()

    def consenfops(self, constraints, nusefulconss, solinfeasible, objinfeasible):  # fmt: skip
        return self.enforce()

    def conslock(self, constraint, locktype, nlockspos, nlocksneg):  # fmt: skip
        for v in self.variables:
            self.model.addVarLocksType(v, locktype, nlockspos + nlocksneg, nlockspos + nlocksneg)
