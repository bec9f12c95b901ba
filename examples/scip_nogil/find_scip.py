"""Prints the path of the SCIP library that PySCIPOpt loads, for meson.build to link the
handler against the same one (PySCIPOpt's wheel ships it as pyscipopt.libs/libscip-*.so)."""

from __future__ import annotations

import re

import pyscipopt  # noqa: F401  (loads its SCIP library into this process)

# libscip.so.10.0, or libscip-<hash>.so.10.0 as auditwheel names it (not libscipy_*).
SCIP = re.compile(r"/libscip[-.][^/]*$")

with open("/proc/self/maps") as maps:
    paths = {line.split()[-1] for line in maps if SCIP.search(line.rstrip())}
if len(paths) != 1:
    raise SystemExit(f"expected one SCIP library loaded by pyscipopt, found {sorted(paths)}")
print(paths.pop())
