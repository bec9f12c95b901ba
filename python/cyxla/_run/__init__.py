"""What runs programs: plugins and platforms, the loaded backend and its version checks,
executables, bound calls, batches, the arrays they take, and the dispatch of host
callbacks. Nothing here imports JAX or `cyxla._lower` when it is imported."""
