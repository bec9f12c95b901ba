"""The disk cache: `store` (where it lives, the entry format, who may write) and the
lowered programs kept in it (`programs`: `store_lowered` and `load_lowered`). Compiled
executables are stored by the core (src/cache); other entries belong to their users:
`cyxla._ffi.probes` (which FFI handlers a plugin took) and `cyxla._run.plugin_scans` (the
plugin entry points installed)."""
