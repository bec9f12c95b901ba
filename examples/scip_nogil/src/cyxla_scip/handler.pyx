# cython: language_level=3
"""A SCIP constraint handler that enforces g(x) <= 0 by outer approximation, evaluating g
and its gradient through a cyxla bound call, with no Python in the loop: SCIP calls the C
callbacks below, which call cyxla's C API, and none of them takes the GIL. A model that
includes it solves with `Model.optimizeNogil()` while other Python threads run."""

from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.stdint cimport uint64_t, uintptr_t
from libc.stdlib cimport calloc, free

from cython.cimports.cyxla._pjrt import PJRT_Buffer_Type_F64
from cython.cimports.cyxla._runtime import (
    ABI_VERSION, OK, Error, Input, ProgramSpec, aligned_memory, bind, call_bound,
    free_aligned, get_spec, import_runtime, release_spec, unbind,
)

import cyxla
import pyscipopt

cyxla.check_abi(ABI_VERSION)
import_runtime()


cdef extern from "scip_api.h" nogil:
    ctypedef struct SCIP
    ctypedef struct SCIP_CONSHDLR
    ctypedef struct SCIP_CONSHDLRDATA
    ctypedef struct SCIP_CONS
    ctypedef struct SCIP_CONSDATA
    ctypedef struct SCIP_VAR
    ctypedef struct SCIP_SOL
    ctypedef unsigned int SCIP_Bool
    ctypedef double SCIP_Real
    ctypedef enum SCIP_RETCODE:
        SCIP_OKAY
        SCIP_ERROR
    ctypedef enum SCIP_RESULT:
        SCIP_FEASIBLE
        SCIP_INFEASIBLE
        SCIP_CONSADDED
    ctypedef enum SCIP_LOCKTYPE:
        SCIP_LOCKTYPE_MODEL
        SCIP_LOCKTYPE_CONFLICT
    ctypedef SCIP_RETCODE (*cyxla_scip_consenfolp)(
        SCIP*, SCIP_CONSHDLR*, SCIP_CONS**, int, int, SCIP_Bool, SCIP_RESULT*) noexcept
    ctypedef SCIP_RETCODE (*cyxla_scip_consenfops)(
        SCIP*, SCIP_CONSHDLR*, SCIP_CONS**, int, int, SCIP_Bool, SCIP_Bool, SCIP_RESULT*) noexcept
    ctypedef SCIP_RETCODE (*cyxla_scip_conscheck)(
        SCIP*, SCIP_CONSHDLR*, SCIP_CONS**, int, SCIP_SOL*, SCIP_Bool, SCIP_Bool, SCIP_Bool,
        SCIP_Bool, SCIP_RESULT*) noexcept
    ctypedef SCIP_RETCODE (*cyxla_scip_conslock)(
        SCIP*, SCIP_CONSHDLR*, SCIP_CONS*, SCIP_LOCKTYPE, int, int) noexcept
    ctypedef SCIP_RETCODE (*cyxla_scip_consfree)(SCIP*, SCIP_CONSHDLR*) noexcept

    SCIP_RETCODE SCIPincludeConshdlrBasic(
        SCIP* scip, SCIP_CONSHDLR** conshdlrptr, const char* name, const char* desc,
        int enfopriority, int chckpriority, int eagerfreq, SCIP_Bool needscons,
        cyxla_scip_consenfolp consenfolp, cyxla_scip_consenfops consenfops,
        cyxla_scip_conscheck conscheck, cyxla_scip_conslock conslock,
        SCIP_CONSHDLRDATA* conshdlrdata)
    SCIP_RETCODE SCIPsetConshdlrFree(SCIP* scip, SCIP_CONSHDLR* conshdlr,
                                     cyxla_scip_consfree consfree)
    SCIP_CONSHDLR* SCIPfindConshdlr(SCIP* scip, const char* name)
    SCIP_RETCODE SCIPcreateCons(
        SCIP* scip, SCIP_CONS** cons, const char* name, SCIP_CONSHDLR* conshdlr,
        SCIP_CONSDATA* consdata, SCIP_Bool initial, SCIP_Bool separate, SCIP_Bool enforce,
        SCIP_Bool check, SCIP_Bool propagate, SCIP_Bool local, SCIP_Bool modifiable,
        SCIP_Bool dynamic, SCIP_Bool removable, SCIP_Bool stickingatnode)
    SCIP_RETCODE SCIPaddCons(SCIP* scip, SCIP_CONS* cons)
    SCIP_RETCODE SCIPreleaseCons(SCIP* scip, SCIP_CONS** cons)
    SCIP_CONSHDLRDATA* SCIPconshdlrGetData(SCIP_CONSHDLR* conshdlr)
    SCIP_RETCODE SCIPcreateConsBasicLinear(
        SCIP* scip, SCIP_CONS** cons, const char* name, int nvars, SCIP_VAR** vars,
        SCIP_Real* vals, SCIP_Real lhs, SCIP_Real rhs)
    SCIP_Real SCIPgetSolVal(SCIP* scip, SCIP_SOL* sol, SCIP_VAR* var)
    SCIP_RETCODE SCIPaddVarLocksType(SCIP* scip, SCIP_VAR* var, SCIP_LOCKTYPE locktype,
                                     int nlocksdown, int nlocksup)
    SCIP_Real SCIPinfinity(SCIP* scip)
    int SCIPmajorVersion()


# scip_api.h declares SCIP 10's API; the values must be those PySCIPOpt was compiled with.
if SCIPmajorVersion() != 10:
    raise ImportError(
        f"cyxla_scip declares SCIP 10's C API, but PySCIPOpt's SCIP is {SCIPmajorVersion()}"
    )
if (pyscipopt.SCIP_RESULT.FEASIBLE, pyscipopt.SCIP_RESULT.INFEASIBLE,
        pyscipopt.SCIP_RESULT.CONSADDED, pyscipopt.SCIP_LOCKTYPE.MODEL) != (
        SCIP_FEASIBLE, SCIP_INFEASIBLE, SCIP_CONSADDED, SCIP_LOCKTYPE_MODEL):
    raise ImportError("scip_api.h's SCIP_RESULT or SCIP_LOCKTYPE values are not PySCIPOpt's")


ctypedef struct Handler:
    int n                   # variables
    SCIP_VAR** variables    # the model's, x[0 .. n)
    double tolerance        # g(x) <= tolerance is feasible
    uint64_t bound          # the bound call of value_and_grad(g): x -> (value, gradient)
    double* x               # its input, n doubles (aligned)
    double* value           # its first output
    double* gradient        # its second output, n doubles
    long long evaluations
    Error error             # the first failure of a call


cdef void destroy(Handler* h) noexcept nogil:
    if h == NULL:
        return
    if h.bound != 0:
        unbind(h.bound, NULL)  # before the memory it reads and writes is freed
    free_aligned(h.x)
    free_aligned(h.value)
    free_aligned(h.gradient)
    free(h.variables)
    free(h)


cdef int evaluate(Handler* h, SCIP* scip, SCIP_SOL* sol) noexcept nogil:
    """g and its gradient at the variables' values in `sol` (NULL: the LP or pseudo
    solution), into h.value and h.gradient; 0, or -1 with the failure kept in h.error."""
    cdef int i
    cdef Error error
    for i in range(h.n):
        h.x[i] = SCIPgetSolVal(scip, sol, h.variables[i])
    h.evaluations += 1
    if call_bound(h.bound, &error) != OK:
        if h.error.status == OK:
            h.error = error
        return -1
    return 0


cdef SCIP_RETCODE enforce(SCIP* scip, SCIP_CONSHDLR* conshdlr, SCIP_RESULT* result) noexcept nogil:
    """The outer-approximation cut g(x*) + grad g(x*) . (x - x*) <= 0 at the current
    solution x*, when g(x*) exceeds the tolerance."""
    cdef Handler* h = <Handler*>SCIPconshdlrGetData(conshdlr)
    cdef SCIP_CONS* cut = NULL
    cdef double rhs
    cdef int i
    if evaluate(h, scip, NULL) != 0:
        return SCIP_ERROR
    if h.value[0] <= h.tolerance:
        result[0] = SCIP_FEASIBLE
        return SCIP_OKAY
    rhs = -h.value[0]
    for i in range(h.n):
        rhs += h.gradient[i] * h.x[i]
    if SCIPcreateConsBasicLinear(scip, &cut, "oa", h.n, h.variables, h.gradient,
                                 -SCIPinfinity(scip), rhs) != SCIP_OKAY:
        return SCIP_ERROR
    if SCIPaddCons(scip, cut) != SCIP_OKAY:
        SCIPreleaseCons(scip, &cut)
        return SCIP_ERROR
    if SCIPreleaseCons(scip, &cut) != SCIP_OKAY:
        return SCIP_ERROR
    result[0] = SCIP_CONSADDED
    return SCIP_OKAY


cdef SCIP_RETCODE enforce_lp(SCIP* scip, SCIP_CONSHDLR* conshdlr, SCIP_CONS** conss, int nconss,
                             int nusefulconss, SCIP_Bool solinfeasible,
                             SCIP_RESULT* result) noexcept nogil:
    return enforce(scip, conshdlr, result)


cdef SCIP_RETCODE enforce_pseudo(SCIP* scip, SCIP_CONSHDLR* conshdlr, SCIP_CONS** conss,
                                 int nconss, int nusefulconss, SCIP_Bool solinfeasible,
                                 SCIP_Bool objinfeasible, SCIP_RESULT* result) noexcept nogil:
    return enforce(scip, conshdlr, result)


cdef SCIP_RETCODE check(SCIP* scip, SCIP_CONSHDLR* conshdlr, SCIP_CONS** conss, int nconss,
                        SCIP_SOL* sol, SCIP_Bool checkintegrality, SCIP_Bool checklprows,
                        SCIP_Bool printreason, SCIP_Bool completely,
                        SCIP_RESULT* result) noexcept nogil:
    cdef Handler* h = <Handler*>SCIPconshdlrGetData(conshdlr)
    if evaluate(h, scip, sol) != 0:
        return SCIP_ERROR
    result[0] = SCIP_FEASIBLE if h.value[0] <= h.tolerance else SCIP_INFEASIBLE
    return SCIP_OKAY


cdef SCIP_RETCODE lock(SCIP* scip, SCIP_CONSHDLR* conshdlr, SCIP_CONS* cons,
                       SCIP_LOCKTYPE locktype, int nlockspos, int nlocksneg) noexcept nogil:
    # g may grow in either direction of every variable: lock both ways.
    cdef Handler* h = <Handler*>SCIPconshdlrGetData(conshdlr)
    cdef int i
    for i in range(h.n):
        if SCIPaddVarLocksType(scip, h.variables[i], locktype, nlockspos + nlocksneg,
                               nlockspos + nlocksneg) != SCIP_OKAY:
            return SCIP_ERROR
    return SCIP_OKAY


cdef SCIP_RETCODE free_handler(SCIP* scip, SCIP_CONSHDLR* conshdlr) noexcept nogil:
    destroy(<Handler*>SCIPconshdlrGetData(conshdlr))
    return SCIP_OKAY


cdef SCIP* scip_of(model) except NULL:
    return <SCIP*>PyCapsule_GetPointer(model.to_ptr(False), "scip")


cdef Handler* handler_of(model, name) except NULL:
    cdef SCIP_CONSHDLR* conshdlr = SCIPfindConshdlr(scip_of(model), name.encode())
    if conshdlr == NULL:
        raise KeyError(f"the model has no constraint handler named {name!r}")
    return <Handler*>SCIPconshdlrGetData(conshdlr)


cdef bint fits(const ProgramSpec* spec, size_t n) noexcept:
    """Whether the program takes x: float64[n] and returns (float64[], float64[n])."""
    return (spec.num_inputs == 1 and spec.num_outputs == 2
            and spec.input_types[0] == PJRT_Buffer_Type_F64 and spec.input_ranks[0] == 1
            and spec.input_dims[0][0] == <long long>n
            and spec.output_types[0] == PJRT_Buffer_Type_F64 and spec.output_ranks[0] == 0
            and spec.output_types[1] == PJRT_Buffer_Type_F64 and spec.output_ranks[1] == 1
            and spec.output_dims[1][0] == <long long>n)


cdef Handler* bound_handler(executable, variables, double tolerance) except NULL:
    """A Handler over the SCIP variables of `variables`, with its bound call of
    `executable`; raises (freeing what it made) when the program does not fit."""
    cdef size_t n = len(variables), i
    cdef ProgramSpec spec
    cdef Error error
    cdef Input input
    cdef void* outputs[2]
    cdef Handler* h = <Handler*>calloc(1, sizeof(Handler))
    if h == NULL:
        raise MemoryError()
    spec.struct_size = sizeof(ProgramSpec)
    spec.executable = 0
    try:
        h.n = <int>n
        h.tolerance = tolerance
        h.error.status = OK
        h.variables = <SCIP_VAR**>calloc(n, sizeof(SCIP_VAR*))
        h.x = <double*>aligned_memory(n * sizeof(double))
        h.value = <double*>aligned_memory(sizeof(double))
        h.gradient = <double*>aligned_memory(n * sizeof(double))
        if h.variables == NULL or h.x == NULL or h.value == NULL or h.gradient == NULL:
            raise MemoryError()
        for i in range(n):
            h.variables[i] = <SCIP_VAR*><uintptr_t>variables[i].ptr()
        if get_spec(executable.handle, &spec, &error) != OK:
            raise RuntimeError(error.message.decode())
        if not fits(&spec, n):
            raise ValueError(
                f"the program must take x: float64[{n}] (one value per variable) and return "
                f"(g(x): float64[], its gradient: float64[{n}]), as jax.value_and_grad(g) "
                f"does; it takes ({', '.join(map(str, executable.inputs))}) and returns "
                f"({', '.join(map(str, executable.outputs))})"
            )
        input.data = h.x
        input.type = PJRT_Buffer_Type_F64
        input.nbytes = n * sizeof(double)
        outputs[0] = h.value
        outputs[1] = h.gradient
        if bind(&spec, &input, 1, outputs, 2, &h.bound, &error) != OK:
            raise RuntimeError(error.message.decode())
        return h
    except BaseException:
        destroy(h)
        raise
    finally:
        release_spec(&spec)  # the bound call holds the executable


def include_handler(model, variables, executable, *, name="jax", tolerance=1e-6, enfopriority=-10,
            chckpriority=-10):
    """Includes in `model` (a pyscipopt.Model, before its solve) a constraint handler
    `name` and one constraint of it, g(variables) <= 0, enforced by outer-approximation
    cuts; `executable` is the compiled `jax.value_and_grad(g)`, taking float64[n] (the
    variables' values) and returning (g, its gradient: float64[n]). The model owns the
    handler from then on and frees it, with its bound call, when it is freed."""
    cdef SCIP* scip = scip_of(model)
    cdef SCIP_CONSHDLR* conshdlr = NULL
    cdef SCIP_CONS* cons = NULL
    cdef Handler* h = bound_handler(executable, variables, tolerance)
    if SCIPincludeConshdlrBasic(scip, &conshdlr, name.encode(),
                                b"g(x) <= 0 by outer approximation, evaluated by cyxla",
                                enfopriority, chckpriority, 100, 1, enforce_lp,
                                enforce_pseudo, check, lock,
                                <SCIP_CONSHDLRDATA*>h) != SCIP_OKAY:
        destroy(h)
        raise RuntimeError(f"SCIPincludeConshdlrBasic failed for {name!r}")
    # From here on the model holds the handler; free_handler frees it with the model (SCIP
    # refuses to set it only in a stage where the include above was refused already).
    if SCIPsetConshdlrFree(scip, conshdlr, free_handler) != SCIP_OKAY:
        raise RuntimeError("SCIPsetConshdlrFree failed")
    if (SCIPcreateCons(scip, &cons, b"g", conshdlr, NULL, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0)
            != SCIP_OKAY or SCIPaddCons(scip, cons) != SCIP_OKAY
            or SCIPreleaseCons(scip, &cons) != SCIP_OKAY):
        raise RuntimeError("adding the constraint g(x) <= 0 failed")


def evaluations(model, name="jax"):
    """The evaluations of g that the handler `name` of `model` made."""
    return handler_of(model, name).evaluations


def error(model, name="jax"):
    """None, or the message of the first evaluation of the handler `name` of `model` that
    failed (the solve then stopped with SCIP_ERROR)."""
    cdef Handler* h = handler_of(model, name)
    return None if h.error.status == OK else h.error.message.decode()
