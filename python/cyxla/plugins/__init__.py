"""Entry-point modules of the plugins cyxla knows, one per extra.

Each module has `PLATFORM`, `EXTRA` and `library_path()`, the interface of the
`cyxla.plugins` entry-point group; `library_path()` raises ModuleNotFoundError or
FileNotFoundError when the package that ships the library is not installed. Their client
options are the platform's defaults (`cyxla._platforms.CLIENT_DEFAULTS`): none of these
modules defines `CREATE_OPTIONS`, which another package's entry may.
"""
