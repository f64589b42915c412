"""What the commands that run trials (run, scaleup, resume) pass alike to the runner, read
from their options and the environment."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import TypedDict

from teiten.model.errors import UserError
from teiten.report import outdir
from teiten.run import busy
from teiten.store import access
from teiten.store.address import StoreAddress


class RunnerOptions(TypedDict):
    """The keywords of :func:`teiten.run.runner.execute` that run, scaleup and resume read
    alike from their options."""

    monitors: bool
    beside_others: bool
    noise_guard: bool | None
    testbed: str | None
    wait_quiet_s: float


def runner_options(args: argparse.Namespace) -> RunnerOptions:
    """What run, scaleup and resume pass alike to the runner."""
    return {"monitors": not args.no_monitors, "beside_others": args.beside_others,
            "noise_guard": _noise_guard(args), "testbed": testbed(args),
            "wait_quiet_s": busy.WAIT_QUIET_S if args.wait_quiet is None else args.wait_quiet}


def _noise_guard(args: argparse.Namespace) -> bool | None:
    """--noise-guard on|off; else TEITEN_NOISE_GUARD (the test suite turns it off for the
    tests that are not about it); else None: what the study says."""
    given = args.noise_guard or os.environ.get("TEITEN_NOISE_GUARD")
    if given not in (None, "", "on", "off"):
        raise UserError(f"TEITEN_NOISE_GUARD={given}: give on or off")
    return None if not given else given == "on"


# A testbed's name: what a person calls the machine, short enough for a label or a file name.
TESTBED_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def testbed(args: argparse.Namespace) -> str | None:
    """--testbed NAME; else TEITEN_TESTBED; else None (the study's testbed is then the hash
    of the machine's identity: teiten.host.fingerprint.testbed_key)."""
    given = args.testbed if args.testbed is not None else os.environ.get("TEITEN_TESTBED") or None
    if given is not None and not TESTBED_NAME.fullmatch(given):
        where = f"--testbed {given!r}" if args.testbed is not None else f"TEITEN_TESTBED={given!r}"
        raise UserError(f"{where}: a testbed name is 1 to 64 letters, digits, '.', '_' or '-', "
                        "starting with a letter or digit, e.g. ci-box-1")
    return given


def check_options(args: argparse.Namespace, address: StoreAddress) -> None:
    """Before the study is made or changed: the testbed's name, the store's path (one this user
    cannot make or open is refused before the machine is waited for), and the report directory."""
    testbed(args)
    if address.path is not None:
        access.check_path(address.path, create=True)
    check_report_dir(args, address)


def check_report_dir(args: argparse.Namespace, address: StoreAddress) -> None:
    """Before any trial: refuse a report directory (--report, else beside the store) that
    holds files teiten did not write, unless --overwrite or --no-report."""
    if not args.no_report:
        out = Path(args.report) if args.report else address.report_dir()
        outdir.check(out, overwrite=args.overwrite, option="--report")
