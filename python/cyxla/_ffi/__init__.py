"""Custom calls: the typed XLA FFI handlers that programs call.

Three sources feed one table (`registry`): jaxlib's CPU kernels and the targets JAX holds
(`sources`), and `cyxla.register_ffi_target`. `mirror` passes later
`jax.ffi.register_ffi_target` calls on; `plugin` registers and verifies targets with the
loaded plugin; `checks` explains the custom calls a plugin cannot run; `probes` remembers,
in the disk cache, which handlers a plugin took. `targets` is what cyxla knows of one
target. Imports run registry -> plugin, sources -> targets.
"""
