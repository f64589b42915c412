"""``make bench``: every benchmark of teiten itself, printing its figures."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import orchestration, overhead, snapshot  # noqa: E402

if __name__ == "__main__":
    print("== harness overhead ==", flush=True)
    overhead.main()
    print("== snapshot restore ==", flush=True)
    snapshot.main()
    print("== orchestration ==", flush=True)
    orchestration.main()
