"""What runs programs: plugins and platforms, the loaded backend and its version checks,
executables, bound calls, batches and the arrays they take (host callbacks' dispatch is
`cyxla._ffi.callbacks`). Nothing here imports JAX or `cyxla._lower` when it is imported."""
