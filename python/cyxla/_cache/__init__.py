"""The disk cache: `store` (where it lives, the entry format, who may write), `keys` (what
decides whether an entry is still right), and the kinds of entry, `executables`
(compiled by the plugin), `programs` (lowered, `store_lowered` and `load_lowered`) ,
`probes` (which FFI handlers a plugin took when it loaded) and `scans` (the plugin entry
points installed)."""
