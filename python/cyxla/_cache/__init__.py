"""The disk cache's store (`store`: where it lives, the entry format, who may write).
Compiled executables are stored by the core (src/cache); other entries belong to their
users: `cyxla._program.cached` (lowered programs: `store_lowered` and `load_lowered`),
`cyxla._ffi.probes` (which FFI handlers a plugin took) and `cyxla._run.plugin_scans` (the
plugin entry points installed)."""
