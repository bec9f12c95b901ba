"""`compile_program` and `Executable`: a program compiled by the plugin, run from Python."""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from cyxla import _core
from cyxla._errors import DtypeError, InvalidArgumentError, UnsupportedProgramError
from cyxla._ffi import checks
from cyxla._ffi.callbacks import PYTHON_CALLBACK_TARGET
from cyxla._program.program import Program, TensorSpec, encode_specs
from cyxla._run import backend
from cyxla._run.bound import BoundCall
from cyxla._run.exact_arrays import carrier_view, exact_arrays

__all__ = ["CompileStatistics", "Executable", "LazyHandle", "Runner", "compile_program"]


@dataclass(frozen=True)
class CompileStatistics:
    """What `compile_program` did and how long it took."""

    #: Seconds the plugin spent compiling the program; 0.0 when the disk cache had it.
    compile_seconds: float
    #: Whether the executable was loaded from the disk cache instead of compiled.
    cache_hit: bool = False
    #: Seconds spent looking the program up in the disk cache and loading what it had.
    load_seconds: float = 0.0
    #: Why the disk cache was not used, or why a cached entry was ignored and replaced
    #: (truncated, corrupted, foreign or unsafe); None when nothing went wrong.
    cache_error: str | None = None


@dataclass(frozen=True)
class Runner:
    """Which runner an executable's calls go through, and which it would take.

    cyxla runs a CPU program without PJRT's executor, calling the plugin's own compiled
    kernels itself (the same object code, so the same numbers, bit for bit), when the
    compiled form is a sequence it can run: kernels (their workgroups shared with helper
    threads) and copies, loops and conditionals of them, over objects that need nothing
    but libc, libm and compiler-runtime functions. The verdict is read from the
    executable as the plugin compiled it; anything cyxla cannot read, or does not run,
    keeps PJRT, and `reason` says what (docs/performance.md, "Which runner a call takes").
    """

    #: The runner its calls take: "kernels" or "pjrt".
    name: str
    #: "kernels" when its compiled form qualifies for the kernel runner, "pjrt" when not.
    #: A program that qualifies still runs on PJRT where the environment variable
    #: CYXLA_RUNNER is "pjrt" when it is loaded, or where its objects cannot be loaded.
    would_take: str
    #: Why `name` is what it is, in words: what qualifies it, the first thing that keeps it
    #: on PJRT (a thunk kind, a symbol, a relocation, the platform, the reader's message),
    #: or why the kernel runner it qualifies for was not taken.
    reason: str


class LazyHandle:
    """The native handle of a core executable, made on first use: once, however many
    threads ask at once. It does not hold the executable (its owner does), so that
    dropping the owner frees it."""

    def __init__(self) -> None:
        self._handle: _core.NativeHandle | None = None
        self._lock = threading.Lock()

    def value_of(self, native: _core.Executable | _core.BatchedExecutable) -> int:
        """The handle of `native`, which is always the same executable."""
        handle = self._handle
        if handle is None:
            with self._lock:
                if self._handle is None:
                    self._handle = _core.NativeHandle(native)
                handle = self._handle
        return handle.value


class Executable:
    """A program compiled for the loaded plugin.

    `run` is for tests and interactive use; native code runs the same executable with
    `execute` from the C API, with no Python and no GIL.
    """

    def __init__(
        self,
        native: _core.Executable,
        program: Program,
        options: bytes | None = None,
        runner: str = "",
    ) -> None:
        #: The C++ executable that `run` calls (internal: tests and the benchmark use it).
        self._native = native
        self.program = program
        """The `Program` this executable was compiled from."""
        #: The serialized compile options it was compiled with, for its variant; None: the
        #: ones compile_program gives `program` by default.
        self._options = options
        #: The runner compile_program was asked for ("" for CYXLA_RUNNER's), for its variant.
        self._runner = runner
        #: The thread compiling the variant that reads large unaligned inputs in place,
        #: once run has asked for it (internal: tests join it).
        self._variant_compile: threading.Thread | None = None
        self._handle = LazyHandle()
        #: Per input: (shape, dtype, the dtype handed to the core).
        self._in = [(s.shape, s.dtype, _carrier(s.dtype)) for s in program.inputs]
        #: Per output: (shape, the dtype the core writes, bytes); `_views` says which need a
        #: view.
        self._out = [(s.shape, _carrier(s.dtype) or s.dtype, s.nbytes) for s in program.outputs]
        self._views = [s.dtype if _carrier(s.dtype) else None for s in program.outputs]
        self._any_view = any(d is not None for d in self._views)
        #: Whether every output is made by NumPy (none is large enough to be recycled).
        self._small = all(nbytes < _RECYCLED_BYTES for _, _, nbytes in self._out)
        #: The outputs' shapes and dtypes apart, for run's `map(np.empty, ...)`: a list
        #: comprehension makes a function object on every call (Python 3.11).
        self._out_shapes = [shape for shape, _, _ in self._out]
        self._out_dtypes = [dtype for _, dtype, _ in self._out]
        #: run's calls: the core checks the arrays on every call (cheaply, building no
        #: text) and keeps the buffers of inputs that come back at the same address.
        self._call = _core._CachedRun(native)
        #: Whether run without `out` makes its outputs in the core (`_CachedRun.run_new`,
        #: one call from Python): where NumPy makes them all and none needs a view.
        self._new_in_core = self._small and not self._any_view
        if self._new_in_core:
            self._call.make_outputs_with(np.empty, self._out_shapes, self._out_dtypes)

    @property
    def handle(self) -> int:
        """The handle native code passes to `cyxla_get_spec` (see cyxla/cyxla.h).

        It stays valid while this Executable lives; a spec taken from it keeps the
        compiled program alive until the spec is released. Made on first use; threads
        that ask at once all get the same one (a second made in a race would release
        the first when it replaced it, leaving some threads a dead handle).
        """
        return self._handle.value_of(self._native)

    @property
    def runner(self) -> Runner:
        """Which runner this executable's calls take, which it would take, and why.

        Read once, when the executable was compiled or loaded from the disk cache, from
        the plugin's serialized form; see `Runner`.
        """
        name, would_take, reason = _core.runner_of(self._native)
        return Runner(name=name, would_take=would_take, reason=reason)

    @property
    def platform(self) -> str:
        """The platform the program was lowered and compiled for: cpu, cuda, rocm or tpu."""
        return self.program.platform

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        """The shape and dtype of each input, in order: what `run` takes."""
        return self.program.inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        """The shape and dtype of each output, in order: what `run` returns."""
        return self.program.outputs

    @property
    def output_bytes(self) -> tuple[int, ...]:
        """The size in bytes of each output, as native callers allocate them."""
        return tuple(self._native.output_bytes)

    def run(
        self, arrays: Sequence[Any], *, out: Sequence[np.ndarray] | None = None
    ) -> tuple[np.ndarray, ...]:
        """Runs the program on `arrays`, one per input, and returns its outputs.

        Args:
            arrays: One array (or anything NumPy converts) per input, of the input's
                shape; converted to the input's dtype where NumPy's `same_kind` casting
                allows it.
            out: As in NumPy's functions, one array per output, of exactly the output's
                shape and dtype (`outputs`), writeable and C-contiguous: the results are
                written into them, so that a loop makes no new arrays. An output array
                may be an input array too.

        Returns:
            The outputs, one array per output (`out` as a tuple when it is given).

        Raises:
            InvalidArgumentError: a wrong count or shape of `arrays`, or of `out` (or an
                `out` array that is read-only or not contiguous), naming the argument.
            DtypeError: an input that cannot be cast, or an `out` array of another dtype
                (`out` is not cast), naming the argument.
            TypeError: `out` holds something other than NumPy arrays.

        Without `out`, outputs of 128 KiB or more are returned in 64-byte aligned memory
        that cyxla reuses for a later call once every array over it is freed (up to 8
        blocks and 256 MiB are kept for reuse): large outputs then cost no page faults
        from freshly mapped memory. Inputs that must be converted are converted into such
        memory too, which the CPU plugin reads in place.

        The executable keeps what it made for the last call's inputs: a later call that
        passes arrays at the same addresses (with new values or not) reuses it. On the
        CPU an input or `out` array that is not 64-byte aligned costs one copy per call;
        `cyxla.empty` and `cyxla.zeros` make arrays that cost none. Large unaligned
        inputs as NumPy makes them (1 MiB or more, a whole number of 64 bytes) cost the
        copy for a few calls only: from the fourth call in a row that copies the same
        inputs, a variant of the program that reads them where they are is compiled in a
        thread of its own and used once ready, in a process that has imported JAX (see
        "Large arrays" in the Python guide).
        """
        if out is None and self._new_in_core:
            made = self._call.run_new(arrays)
            if made.__class__ is tuple:  # it ran: the common case, checked first
                return made
            if made is not None:  # it ran, and asks for the variant
                self._variant_wanted()
                return tuple(made)
            # Refused: the inputs are converted (or refused, saying why) below.
        if out is None:
            if self._small:
                outputs = list(map(np.empty, self._out_shapes, self._out_dtypes))
            else:
                outputs = [_new_array(shape, dtype, nbytes) for shape, dtype, nbytes in self._out]
        else:
            outputs = out
        # The core takes arrays that are exactly the program's as they are, and refuses
        # anything else, saying which side it refused; only then are the arguments checked
        # (and the inputs converted) here, where the messages are made.
        outcome = self._call(arrays, outputs)
        if outcome != _RAN:  # a call that ran as it is looks at nothing more
            if outcome != _ASKS_FOR_VARIANT:
                # Refused: both sides are checked (and the inputs converted) at once, so
                # that a refused call goes into the core once more at most.
                if out is not None:
                    outputs = self._carriers_of(out)
                outcome = self._call(self._convert(arrays), outputs, True)
                if outcome in _REFUSED:
                    raise RuntimeError(
                        "internal error in cyxla: the core refused arguments that run() checked"
                    )
            if outcome == _ASKS_FOR_VARIANT:
                self._variant_wanted()
        if out is not None:
            return tuple(out)
        if self._any_view:
            return tuple(
                o if d is None else o.view(d) for o, d in zip(outputs, self._views, strict=True)
            )
        return tuple(outputs)

    def _variant_wanted(self) -> None:
        """A call asked for the variant that reads its large unaligned inputs in place."""
        if "jax" in sys.modules:
            # The variant is written with jaxlib's MLIR (cyxla._program.in_place_variant):
            # a process that has not imported JAX keeps copying rather than import it.
            self._start_variant_compile()

    def bind(
        self, inputs: Sequence[Any] | None = None, outputs: Sequence[Any] | None = None
    ) -> BoundCall:
        """Binds the program to `inputs` and `outputs`, for calls that take no arguments.

        Write into `bound.inputs`, call `bound()`, read `bound.outputs`.

        Args:
            inputs: One NumPy array per input, of exactly its shape and dtype and
                C-contiguous: nothing is converted, since the program reads the arrays'
                memory itself on every call. None makes new zeroed arrays, aligned so
                that the CPU plugin reads them in place.
            outputs: One writeable NumPy array per output, likewise; None makes them.

        Returns:
            The bound call, which holds the arrays and the executable until it is closed.

        Raises:
            InvalidArgumentError: a wrong count or shape, naming the argument.
            DtypeError: a wrong dtype, naming the argument.
            TypeError: something other than NumPy arrays.
        """
        return BoundCall(
            self._native, (self.inputs, self.outputs), inputs, outputs, self.program.name
        )

    def low_level_callable(self, kind: Literal["quad", "ndimage"]) -> Any:
        """The program as a `scipy.LowLevelCallable`: SciPy calls it from C, with no Python
        per evaluation.

        The program takes one 1-D float32 or float64 array `x` of shape (n,) and returns
        one float32 or float64 scalar (shape ()). Each evaluation copies SciPy's doubles
        into `x` (rounding them for float32), runs the program through a bound call, and
        returns the scalar as a double.

        - "quad": `double f(int n, double *x, void *user_data)`, the integrand of
          `scipy.integrate.quad`, `dblquad`, `tplquad` and `nquad`. `x` holds the
          integration variables, then the values of quad's `args`: n is the number of
          variables plus `len(args)` (1 for a plain `quad`). An evaluation that cannot
          run (another n) returns NaN, which quad reports as a warning or a NaN result.
        - "ndimage": `int f(double *buffer, intptr_t filter_size, double *result,
          void *user_data)`, the function of `scipy.ndimage.generic_filter`. `x` holds the
          values under the footprint, so n is the footprint's number of True elements
          (the product of `size`); another filter size makes SciPy raise RuntimeError.

        The callable owns the bound call and its memory and holds the compiled program:
        it stays valid after this executable is gone. Evaluations from several threads
        wait for each other; none takes the GIL. It is not a Python function and SciPy
        accepts it only where it accepts a LowLevelCallable of that signature.

        Args:
            kind: "quad" or "ndimage", the signature to give.

        Returns:
            A `scipy.LowLevelCallable` (SciPy is imported here, not when cyxla is).

        Raises:
            InvalidArgumentError: the program's inputs or outputs do not fit (naming what
                was expected and what the program has), or `kind` is neither.
            UnsupportedProgramError: the program calls back into Python, which would take
                the GIL inside SciPy's C loop.
            ImportError: SciPy is not installed.
        """
        if kind not in ("quad", "ndimage"):
            raise InvalidArgumentError(
                f"low_level_callable: kind must be 'quad' or 'ndimage', given {kind!r}"
            )
        where = f"low_level_callable({kind!r}): {self.program.name}"
        if PYTHON_CALLBACK_TARGET in self.program.custom_calls:
            raise UnsupportedProgramError(
                f"{where} calls back into Python "
                f"({', '.join(self.program.callbacks) or 'a Python function'}), "
                "which would take the GIL in every evaluation of SciPy's C loop; lower the "
                "function without host callbacks"
            )
        role = "the integration variables" if kind == "quad" else "the footprint's values"
        ins, outs = self.inputs, self.outputs
        if len(ins) != 1 or len(ins[0].shape) != 1 or ins[0].dtype.name not in _REAL:
            raise InvalidArgumentError(
                f"{where}: expected one input, a 1-D float32 or float64 array of {role} "
                f"(shape (n,)), given ({', '.join(map(str, ins))})"
            )
        if ins[0].shape[0] == 0:
            raise InvalidArgumentError(f"{where}: expected n >= 1 values, given {ins[0]}")
        if len(outs) != 1 or outs[0].shape != () or outs[0].dtype.name not in _REAL:
            raise InvalidArgumentError(
                f"{where}: expected one output, a float32 or float64 scalar (shape ()), "
                f"given ({', '.join(map(str, outs))})"
            )
        import scipy  # only here: cyxla imports no SciPy of its own

        function, user_data = _core._low_level_callable(self._native, kind)
        return scipy.LowLevelCallable(function, user_data)

    def _start_variant_compile(self) -> None:
        """Compiles, in a thread of its own, the variant of the program that reads the
        last call's large unaligned inputs where they are, and hands it to the core; calls
        copy those inputs until it is ready. The core asks once per executable."""
        self._variant_compile = threading.Thread(
            target=self._compile_variant, name=f"cyxla: {self.program.name} in place"
        )
        self._variant_compile.start()

    def _compile_variant(self) -> None:
        from cyxla._program.in_place_variant import variant_program

        try:
            program = variant_program(self.program, self._call.variant_inputs())
            runtime = backend.runtime_for(program.platform)
            options = self._options or _serialized_options(self.program, None)
            native, _ = _load_or_compile(runtime, program, options, self._runner)
            self._call.read_in_place(native)
        except Exception as error:  # a thread has no caller to raise to: said as a warning
            warnings.warn(
                f"cyxla: {self.program.name}: the variant that reads large unaligned inputs "
                f"in place could not be compiled, so they are copied on every call: {error}",
                RuntimeWarning,
                stacklevel=1,
            )

    def _carriers_of(self, out: Any) -> list[np.ndarray]:
        """The arrays of `out`, checked against the outputs, as the core writes them."""
        arrays = exact_arrays(
            "run: out",
            out,
            self.program.outputs,
            program=self.program.name,
            writeable=True,
            cast_note="out is not cast",
        )
        return [carrier_view(a) for a in arrays]

    def _convert(self, arrays: Sequence[Any]) -> list[np.ndarray]:
        if len(arrays) != len(self._in):
            raise InvalidArgumentError(
                f"{self.program.name} takes {len(self._in)} arrays, given {len(arrays)}"
            )
        return [
            _prepare(i, a, spec) for i, (a, spec) in enumerate(zip(arrays, self._in, strict=True))
        ]

    def __repr__(self) -> str:
        ins = ", ".join(map(str, self.inputs))
        outs = ", ".join(map(str, self.outputs))
        return f"<cyxla.Executable {self.program.name}({ins}) -> ({outs}) on {self.platform}>"


#: What the core's `_CachedRun` returns when it ran, and nothing more is to be done.
_RAN = _core._CachedRun.RAN
#: What it returns when it ran nothing: the inputs are not exactly the
#: program's (convert them), or `out` is not (check it, and say why).
_REFUSED = (_core._CachedRun.INPUTS_REFUSED, _core._CachedRun.OUTPUTS_REFUSED)
#: What it returns when it ran, and asks for the variant that reads the call's large
#: unaligned inputs where they are (runtime/in_place_variant.hpp).
_ASKS_FOR_VARIANT = _core._CachedRun.RAN_ASKING_FOR_VARIANT

#: Arrays of at least this many bytes that run makes (outputs, converted inputs) live in
#: cyxla's recycled aligned memory rather than NumPy's: glibc's malloc maps blocks this
#: large afresh and unmaps them when freed, so that every call would page-fault through
#: new memory, and NumPy's are not aligned for the CPU plugin to read or write in place.
_RECYCLED_BYTES = 1 << 17
#: The dtypes a low-level callable's program reads and writes (Executable.low_level_callable).
_REAL = ("float32", "float64")


def _new_array(shape: tuple[int, ...], dtype: np.dtype, nbytes: int) -> np.ndarray:
    """An uninitialized C-contiguous array; a large one is 64-byte aligned and recycled."""
    if nbytes < _RECYCLED_BYTES:
        return np.empty(shape, dtype)
    return _core._recycled_bytes(nbytes).view(dtype).reshape(shape)


def _carrier(dtype: np.dtype) -> np.dtype | None:
    """The plain dtype that carries `dtype`'s bytes into the core (bfloat16 as uint16)."""
    return np.dtype(f"u{dtype.itemsize}") if dtype.kind == "V" else None


def _prepare(index: int, value: Any, spec: tuple[Any, np.dtype, np.dtype | None]) -> np.ndarray:
    shape, dtype, carrier = spec
    array = value if type(value) is np.ndarray else np.asarray(value)
    if array.shape != shape:
        raise InvalidArgumentError(
            f"argument {index}: expected shape {shape} ({dtype.name}), given shape "
            f"{array.shape} ({array.dtype.name})"
        )
    if array.dtype != dtype:
        if not np.can_cast(array.dtype, dtype, casting="same_kind"):
            raise DtypeError(
                f"argument {index}: expected {dtype.name}{list(shape)}, given "
                f"{array.dtype.name}{list(array.shape)}, which does not cast to "
                f"{dtype.name} under 'same_kind' casting"
            )
        array = _copy(array, shape, dtype)
    elif not array.flags.c_contiguous:
        array = _copy(array, shape, dtype)
    return array.view(carrier) if carrier is not None else array


def _copy(array: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """`array` cast to `dtype` into a new C-contiguous array (aligned when large)."""
    copy = _new_array(shape, dtype, int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
    np.copyto(copy, array, casting="same_kind")
    return copy


def _check_compile_arguments(program: Any, options: Any, runner: Any) -> None:
    if not isinstance(program, Program):
        raise TypeError(
            "compile_program: program must be a cyxla.Program (what cyxla.lower returns), "
            f"given {type(program).__name__}"
        )
    if options is not None and (
        not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options)
    ):
        raise TypeError(
            "compile_program: options must map XLA debug option names (str) to values, "
            f"given {options!r}"
        )
    if runner is not None and not isinstance(runner, str):
        raise TypeError(f"compile_program: runner must be 'auto', 'pjrt' or None, given {runner!r}")


def compile_program(
    program: Program, *, options: Mapping[str, Any] | None = None, runner: str | None = None
) -> tuple[Executable, CompileStatistics]:
    """Compiles `program` with the plugin of its platform, loading the plugin if needed.

    The executable is loaded from the disk cache (`cache_directory`) when an earlier
    compile of the same program, options and plugin stored it there, and stored after
    compiling otherwise; C's `cyxla_load_program` shares the same cache.

    Args:
        program: What `lower`, `load_lowered` or `load_program` returns.
        options: XLA debug options by name, overriding XLA's defaults and cyxla's
            compile defaults of the platform (for example
            `{"xla_cpu_enable_fast_math": False}`; `python -m cyxla info` lists cyxla's,
            such as the CPU's `xla_cpu_prefer_vector_width=128` for programs with an
            atan2, which keeps `jnp.arctan` right). A program loaded from a file compiles
            with the file's compile options unless options are given.
        runner: Which runner the executable's calls take on the CPU (`Executable.runner`):
            "auto", the kernel runner where the program qualifies and PJRT elsewhere, or
            "pjrt", PJRT always. None (the default) takes the environment variable
            `CYXLA_RUNNER`, "auto" when it is unset. The compiled code, and the disk
            cache's entry, are the same either way.

    Returns:
        The executable, and statistics of the compile (its seconds, whether it was a
        cache hit, and why the cache could not be used if it could not).

    Raises:
        TypeError: `program` is not a Program, `options` not a mapping of option
            names, or `runner` not a string.
        InvalidArgumentError: the program's input or output specs are not those of what
            the plugin compiled (specs edited after `lower`), or `runner` (or
            `CYXLA_RUNNER`) names no runner.
        UnsupportedProgramError: the program calls a custom-call target that the
            plugin cannot run.
        PluginError: no plugin of the program's platform could be loaded.
        CompileError: the plugin refused to compile the program.
    """
    _check_compile_arguments(program, options, runner)
    runtime = backend.runtime_for(program.platform)
    checks.check_program(program.custom_calls, program.platform)
    serialized_options = _serialized_options(program, options)
    native, statistics = _load_or_compile(runtime, program, serialized_options, runner or "")
    return Executable(native, program, serialized_options, runner or ""), statistics


def _serialized_options(program: Program, options: Mapping[str, Any] | None) -> bytes:
    """The CompileOptionsProto that compile_program compiles `program` with."""
    # A program from a file compiles with the file's options, as the native loader does.
    if not options and program.compile_options is not None:
        return program.compile_options
    # Options made afresh are jaxlib's protobuf: only then is JAX imported here.
    from cyxla._jax.compile_options import compile_options

    return compile_options(options)


def _load_or_compile(
    runtime: _core.Runtime, program: Program, serialized_options: bytes, runner: str
) -> tuple[_core.Executable, CompileStatistics]:
    """The core's load-or-compile of `program` with `serialized_options`, which
    compile_program has checked, for `runner` ("" for CYXLA_RUNNER's choice)."""
    with checks.explain_compile_errors():
        native, hit, compile_seconds, load_seconds, cache_error = _core.load_or_compile(
            runtime,
            f"compile_program: {program.name}",
            program.name,
            program.platform,
            program.stablehlo,
            serialized_options,
            encode_specs(program.inputs),
            encode_specs(program.outputs),
            list(program.custom_calls),
            list(program.donated_outputs),
            runner,
        )
    statistics = CompileStatistics(
        compile_seconds,
        cache_hit=hit,
        load_seconds=load_seconds,
        cache_error=cache_error or None,
    )
    return native, statistics
