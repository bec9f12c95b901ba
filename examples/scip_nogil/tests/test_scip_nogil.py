"""The Cython handler against the guide's Python handler and enumeration: the same optimum,
solved with optimizeNogil, alone and in threads; and its refusals."""

from __future__ import annotations

import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cyxla
import cyxla_scip
from cyxla_scip.guide_problem import GUIDE, Problem, larger, result


@pytest.mark.parametrize("problem", [GUIDE, larger(n=4, bound=4)], ids=["guide", "n4"])
def test_the_cython_handler_solves_to_the_python_handlers_and_the_enumerations_optimum(
    problem: Problem,
) -> None:
    ours, x, _ = problem.model("cython")
    ours.optimizeNogil()
    objective, point = result(ours, x)
    theirs, y, _ = problem.model("python")
    theirs.optimize()
    python_objective, python_point = result(theirs, y)
    best, best_point = problem.brute_force()
    assert objective == python_objective == best
    np.testing.assert_array_equal(point, python_point)
    np.testing.assert_array_equal(point, best_point)
    assert problem.g(point.astype(np.float64)) <= 1e-6
    assert cyxla_scip.evaluations(ours) > 0
    assert cyxla_scip.error(ours) is None


def test_both_handlers_take_the_same_search() -> None:
    """The Cython handler makes the cuts the Python one makes: as many evaluations and
    nodes, with optimizeNogil (the Python handler's callbacks take the GIL)."""
    problem = larger(n=4, bound=5)
    ours, _, our_evaluations = problem.model("cython")
    ours.optimizeNogil()
    theirs, _, their_evaluations = problem.model("python")
    theirs.optimizeNogil()
    assert our_evaluations() == their_evaluations() > 100
    assert ours.getNNodes() == theirs.getNNodes()
    assert ours.getObjVal() == theirs.getObjVal()


def test_models_solve_in_threads_at_once() -> None:
    problem = larger(n=4, bound=5)
    best, best_point = problem.brute_force()
    models = [problem.model("cython") for _ in range(3)]
    threads = [threading.Thread(target=m.optimizeNogil) for m, _, _ in models]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for m, x, _ in models:
        objective, point = result(m, x)
        assert objective == pytest.approx(best, abs=1e-9)
        np.testing.assert_array_equal(point, best_point)
        assert cyxla_scip.error(m) is None
    assert len({evaluations() for _, _, evaluations in models}) == 1  # each its own, alike


def test_a_program_that_does_not_fit_is_refused_naming_both_sides() -> None:
    m, x, _ = GUIDE.model("python")  # any model with three variables
    wrong = cyxla.compile_program(
        cyxla.lower(jax.grad(GUIDE.g), [jax.ShapeDtypeStruct((3,), np.float64)])
    )[0]
    with pytest.raises(
        ValueError,
        match=r"must take x: float64\[3\].*takes \(float64\[3\]\) and returns \(float64\[3\]\)$",
    ):
        cyxla_scip.include_handler(m, x, wrong, name="other")
    two = x[:2]
    with pytest.raises(ValueError, match=r"float64\[2\]"):
        cyxla_scip.include_handler(m, two, GUIDE.executable, name="other")
    with pytest.raises(KeyError, match="no constraint handler named 'other'"):
        cyxla_scip.evaluations(m, "other")


def test_float32_programs_are_refused() -> None:
    m, x, _ = GUIDE.model("python")
    single = cyxla.compile_program(
        cyxla.lower(
            jax.value_and_grad(lambda v: jnp.sum(v * v)), [jax.ShapeDtypeStruct((3,), np.float32)]
        )
    )[0]
    with pytest.raises(ValueError, match="float32"):
        cyxla_scip.include_handler(m, x, single, name="single")
