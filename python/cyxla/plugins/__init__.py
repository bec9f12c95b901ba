"""Entry-point modules of the plugins cyxla knows, one per extra.

Each module has `PLATFORM`, `CREATE_OPTIONS` and `library_path()`, the interface of
the `cyxla.plugins` entry-point group; `library_path()` raises ModuleNotFoundError or
FileNotFoundError when the package that ships the library is not installed.
"""
