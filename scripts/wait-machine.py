#!/usr/bin/env python3
"""Before 'make demo' sets anything up (packages, a build, PostgreSQL), wait for a benchmark
that runs on this machine to finish, saying whose: its setup would disturb that benchmark's
measurements. Runs with Debian's own python3 before the venv exists (teiten.run.runlock needs only
the standard library for this)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from teiten.model.errors import TeitenError  # noqa: E402
from teiten.run import runlock  # noqa: E402 - from the checkout, not an install


def main() -> int:
    try:
        with runlock.hold(study="make demo (its setup)", store="-", command="make demo",
                          wait=runlock.WAIT_LIMIT_S,
                          say=lambda line: print(line, file=sys.stderr, flush=True)):
            pass
    except TeitenError as exc:
        print(f"make demo: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
