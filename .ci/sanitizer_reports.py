"""Reads sanitizer logs (ASan, UBSan, TSan: log_path files) and fails when a report is
cyxla's own: .ci/sanitizers runs it after each sanitizer's tests.

    python .ci/sanitizer_reports.py ROOT LOG...

ROOT is the repository's absolute path; a frame "in src/" is one under ROOT/src/. An ASan
or UBSan report is cyxla's when any frame of it is. The uninstrumented plugin, jaxlib and
Python synchronise in ways ThreadSanitizer cannot see (futexes, their own atomics), so a
TSan report is cyxla's when the first frame of code (past the sanitizer's runtime, libc
and the C++ library's headers) of each access it names is in src/: a race between two
places of cyxla's code, whose synchronisation TSan does see. Other reports are counted."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

FRAME = re.compile(r"^\s+#\d+ (.*)$")
ACCESS = re.compile(r"^\s*(Write|Read|Previous write|Previous read|Atomic|Previous atomic)\b")
# Frames of no program: the sanitizer's interceptors, libc, the C++ library's headers.
NOT_CODE = (
    "libsanitizer",
    "(libtsan.so",
    "(libasan.so",
    "rtld-malloc",
    "/usr/include/c++/",
    "(libc.so",
    "(libstdc++.so",
)


def access_tops(report: str) -> list[str]:
    """The first frame of code of each access stack of a TSan report."""
    tops: list[str] = []
    in_access = False
    for line in report.splitlines():
        frame = FRAME.match(line)
        if ACCESS.match(line):
            in_access = True
        elif frame is None:
            in_access = in_access and not line.strip()  # a new section ends the stack
        elif in_access and not any(n in frame.group(1) for n in NOT_CODE):
            tops.append(frame.group(1))
            in_access = False
    return tops


def is_ours(report: str, src: str) -> bool:
    if "ThreadSanitizer" in report:
        tops = access_tops(report)
        return len(tops) >= 2 and all(src in top for top in tops)
    return src in report


def main() -> int:
    src = str(Path(sys.argv[1]).resolve()) + "/src/"
    reports: list[str] = []
    for log in sys.argv[2:]:
        text = Path(log).read_text(errors="replace")
        for part in re.split(
            r"^={18,}$|(?=^==\d+==ERROR: )|(?=^\S+: runtime error: )", text, flags=re.MULTILINE
        ):
            if re.search(r"WARNING: ThreadSanitizer|ERROR: AddressSanitizer|runtime error:", part):
                reports.append(part)
    ours = [r for r in reports if is_ours(r, src)]
    kinds = Counter(
        (m.group(1) if (m := re.search(r"SUMMARY: \w+: ([\w -]+)", r)) else "report")
        for r in reports
    )
    print(f"{len(reports)} sanitizer reports ({dict(kinds)}), {len(ours)} in cyxla's code (src/)")
    for report in ours:
        print(report)
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main())
