# Stubs of cyxla._benchmark (src/benchmark/module.cpp): native loops for the benchmark and
# the tests. Times are in seconds.

from collections.abc import Sequence

import numpy as np

def execute_loop(
    handle: int, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray], calls: int
) -> float: ...
def execute_threads(
    handle: int,
    inputs: Sequence[np.ndarray],
    outputs: Sequence[np.ndarray],
    calls: int,
    threads: int,
) -> float: ...
def check_threads(
    handle: int, table_in: np.ndarray, table_out: np.ndarray, calls: int, threads: int
) -> int: ...
def raw_pjrt_loop(
    api: int,
    client: int,
    device: int,
    executable: int,
    inputs: Sequence[np.ndarray],
    types: Sequence[int],
    outputs: Sequence[np.ndarray],
    calls: int,
) -> float: ...
def raw_pjrt_phases(
    api: int,
    client: int,
    device: int,
    executable: int,
    inputs: Sequence[np.ndarray],
    types: Sequence[int],
    outputs: Sequence[np.ndarray],
    calls: int,
) -> list[float]: ...
