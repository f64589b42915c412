"""``teiten system check``, ``teiten system setup`` and ``teiten fetch-source``: print the results
of teiten.host.system and teiten.installs.fetch calls."""

from __future__ import annotations

import argparse
import sys

from teiten.cli.output import table
from teiten.host import system
from teiten.installs import fetch


def purposes(args: argparse.Namespace) -> list[str]:
    """--for run,build (or repeated): the purposes named, run when none is."""
    return [p.strip() for given in (args.purposes or ["run"]) for p in given.split(",") if p.strip()]


def cmd_system(args: argparse.Namespace) -> int:
    if args.system_command == "setup":
        system.setup(purposes(args))
        return 0
    found = system.check(purposes(args))
    rows = [{"": "ok" if f.here else "missing" if f.required else "optional",
             "package": f.need.package, "for": f.need.gives,
             "without it": "" if f.here else f.need.without} for f in found]
    account = system.account_missing()
    for name, here, purpose, without in system.accounts():
        rows.append({"": "ok" if here else "missing", "package": f"account {name}",
                     "for": purpose, "without it": "" if here else without})
    print(table(rows, ["", "package", "for"] + (["without it"] if any(r["without it"] for r in rows)
                                                 else [])))
    lacking = [f for f in found if not f.here]
    if any(f.need.cargo for f in lacking):
        print(f"note: {system.inferno_hint()}")
    packages = [f.need.package for f in lacking if not f.need.cargo]
    if packages or account is not None:
        print("'teiten system setup" + "".join(f" --for {p}" for p in purposes(args) if p != "run")
              + "' installs " + ("them" if packages else "it")
              + (" (as root; or: sudo apt-get install -y " + " ".join(packages) + ")"
                 if packages else " (as root)"))
    else:
        print("everything is here")
    return 1 if account is not None or any(f.required for f in lacking) else 0


def cmd_fetch_source(args: argparse.Namespace) -> int:
    print(fetch.upstream_source(args.major, args.dest, say=lambda text: print(
        f"teiten: {text}", file=sys.stderr)))
    return 0
