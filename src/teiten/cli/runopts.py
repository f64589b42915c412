"""What the commands that run trials (run, scaleup, resume) pass alike to the runner, read
from their options and the environment."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from teiten import busy
from teiten.errors import UserError
from teiten.report import outdir
from teiten.store.address import StoreAddress


def runner_options(args: argparse.Namespace) -> dict[str, Any]:
    """What run, scaleup and resume pass alike to the runner."""
    return {"monitors": not args.no_monitors, "beside_others": args.beside_others,
            "noise_guard": _noise_guard(args),
            "wait_quiet_s": busy.WAIT_QUIET_S if args.wait_quiet is None else args.wait_quiet}


def _noise_guard(args: argparse.Namespace) -> bool | None:
    """--noise-guard on|off; else TEITEN_NOISE_GUARD (the test suite turns it off for the
    tests that are not about it); else None: what the study says."""
    given = args.noise_guard or os.environ.get("TEITEN_NOISE_GUARD")
    if given not in (None, "", "on", "off"):
        raise UserError(f"TEITEN_NOISE_GUARD={given}: give on or off")
    return None if not given else given == "on"


def check_report_dir(args: argparse.Namespace, address: StoreAddress) -> None:
    """Before any trial: refuse a report directory (--report, else beside the store) that
    holds files teiten did not write, unless --overwrite or --no-report."""
    if not args.no_report:
        out = Path(args.report) if args.report else address.report_dir()
        outdir.check(out, overwrite=args.overwrite, option="--report")
