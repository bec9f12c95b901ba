"""XLA's CPU plugin, from the `lammps-jax-pjrt-cpu` wheel (the `cpu` extra)."""

from __future__ import annotations

import importlib

PLATFORM = "cpu"
EXTRA = "cpu"


def library_path() -> str:
    package = importlib.import_module("lammps_jax_pjrt_cpu")
    path = package.PLUGIN_PATH
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed lammps-jax-pjrt-cpu")
    return str(path)
