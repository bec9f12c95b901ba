"""JAX's own pieces that cyxla uses: jaxlib's internals in one home (`jaxlib`), StableHLO
serialized through jaxlib's MLIR (`stablehlo`) and XLA's compile options (`compile_options`).
These modules import JAX when imported and nothing of cyxla's, so they sit below every other
folder; outside `cyxla._lower` they are imported only inside the functions that need them
(`tests/test_import_graph.py` holds that rule), so that a process that only loads and runs
programs never imports JAX."""
