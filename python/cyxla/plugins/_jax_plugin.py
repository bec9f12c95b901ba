"""Finding the library inside one of JAX's own plugin packages (`jax_plugins.*`)."""

from __future__ import annotations

import importlib
import pathlib
from types import ModuleType


def package(module: str) -> ModuleType:
    return importlib.import_module(f"jax_plugins.{module}")


def library_in(module: str, filename: str) -> str:
    path = pathlib.Path(package(module).__file__).resolve().parent / filename
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed jax_plugins.{module}")
    return str(path)


def load_nvidia_libraries(module: str) -> None:
    """Preloads the CUDA libraries of the `nvidia` wheels, as JAX does before its plugin.

    JAX's plugin package does it in a private function that knows which library versions
    its build needs; without it the plugin finds no libcudart, cuBLAS or cuDNN.
    """
    load = getattr(package(module), "_load_nvidia_libraries", None)
    if load is not None:
        load()
