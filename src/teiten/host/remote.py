"""Commands on another host, over OpenSSH: the only way teiten reaches a remote machine.

teiten runs the user's own ``ssh`` with the user's ssh config, agent and keys; it never
asks for or stores a password (``BatchMode=yes``: a host that wants one fails at once).
On the remote side it uses POSIX shell and the programs already there; it installs no
agent of its own.

One master connection (``ControlMaster``, its socket in a private temporary directory)
carries every later command, so the many short commands of a study do not each pay for
a handshake. :meth:`Ssh.close` ends it.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import signal
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

from teiten.host import paths, procs
from teiten.model.errors import ProcessError, ServerError

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 10  # seconds for the TCP connection and the ssh handshake
# The exit status ssh itself uses when it could not connect or lost the connection.
SSH_FAILED = 255
CONTROL_PREFIX = "teiten-ssh-"  # the master's private directory, in the temporary directory


def quote_command(argv: Sequence[str]) -> str:
    """The one string ssh hands to the remote login shell: every argument quoted."""
    return " ".join(shlex.quote(str(a)) for a in argv)


class Ssh:
    """A host reached as ``target`` ("user@host" or a Host of the ssh config)."""

    def __init__(self, target: str, config: Path | None = None, *, label: str | None = None):
        self.target = target
        self.config = config
        self.label = label or target  # how messages name the host (the server's name)
        self._control_dir: Path | None = None
        self._master: procs.Background | None = None

    # -- building commands -----------------------------------------------------------------

    def _where(self) -> str:
        return f"ssh host {self.label} ({self.target})" if self.label != self.target \
            else f"ssh host {self.target}"

    def _options(self) -> list[str]:
        argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT}",
                "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4"]
        if self.config is not None:
            argv += ["-F", str(self.config)]
        return argv

    def _client_options(self) -> list[str]:
        """Options of a command: through the master when it runs. ControlMaster=no falls
        back to a connection of its own when the master's socket is gone."""
        argv = self._options()
        if self._control_dir is not None:
            argv += ["-o", "ControlMaster=no", "-o", f"ControlPath={self._control_dir / 'master'}"]
        return argv

    def argv(self, command: Sequence[str]) -> list[str]:
        """The local argument list that runs ``command`` (an argument list) on the host."""
        return [*self._client_options(), self.target, "--", quote_command(command)]

    @staticmethod
    def env() -> dict[str, str]:
        """teiten's allow-listed environment plus the user's ssh agent (procs drops it)."""
        extra = {k: os.environ[k] for k in ("SSH_AUTH_SOCK",) if k in os.environ}
        return procs.build_env(extra)

    def hint(self) -> str:
        config = f"-F {shlex.quote(str(self.config))} " if self.config is not None else ""
        return (f"check that sshd runs there and that `ssh {config}{self.target} true` works "
                "without a password")

    def _cannot_connect(self, stderr: str) -> ServerError:
        lines = [line.strip() for line in stderr.splitlines() if line.strip()]
        # ssh's own complaint is its last line; earlier ones are warnings (known hosts...).
        reason = lines[-1] if lines else "ssh exited without saying why"
        return ServerError(f"{self._where()}: cannot connect: {reason}; {self.hint()}")

    # -- the master connection -----------------------------------------------------------------

    def check(self) -> None:
        """Connect (and keep the connection for later commands), or raise ServerError with
        one line that says why and what to try."""
        if self._master is not None and self._master.alive():
            return
        self._close_master()
        if shutil.which("ssh") is None:
            raise ServerError(f"{self._where()}: the OpenSSH client 'ssh' is not installed here")
        self._control_dir = Path(tempfile.mkdtemp(prefix=CONTROL_PREFIX))  # 0700: ours only
        paths.mark_owned(self._control_dir, f"ssh master connection to {self.target}")
        socket_path = self._control_dir / "master"
        # The master's messages go to a file (-E): it lives as long as the study, and a
        # pipe nobody reads would block it once full.
        messages = self._control_dir / "master.log"
        argv = [*self._options(), "-M", "-N", "-E", str(messages), "-o", "ControlPersist=no",
                "-o", f"ControlPath={socket_path}", self.target]
        master = procs.spawn(argv, env=self.env(), what=f"ssh master to {self.target}")
        self._master = master
        # The socket appears once authentication succeeded; the master exits on failure.
        deadline = time.monotonic() + CONNECT_TIMEOUT * 3
        while not socket_path.exists():
            if not master.alive():
                done = master.stop()
                said = messages.read_text(errors="replace") if messages.exists() else ""
                self._close_master()
                raise self._cannot_connect(said + done.stderr)
            if time.monotonic() > deadline:
                self._close_master()
                raise ServerError(f"{self._where()}: cannot connect: no session within "
                                  f"{CONNECT_TIMEOUT * 3} s; {self.hint()}")
            time.sleep(0.05)
        log.info("connected to %s", self._where())

    def _close_master(self) -> None:
        master, self._master = self._master, None
        if master is not None and master.alive() and self._control_dir is not None:
            # Ask it to end its sessions and exit; a SIGTERM alone can leave it waiting
            # for a session's channel to close.
            try:
                procs.run([*self._options(), "-o", f"ControlPath={self._control_dir / 'master'}",
                           "-O", "exit", self.target], timeout=10, check=False,
                          what="ssh -O exit", env=self.env())
            except ProcessError as exc:
                log.warning("%s: %s", self._where(), exc)
        if master is not None and master.alive():
            master.stop(signal.SIGTERM, timeout=10)
        if self._control_dir is not None:
            shutil.rmtree(self._control_dir, ignore_errors=True)
            self._control_dir = None

    def close(self) -> None:
        """End the master connection (and with it every command still using it)."""
        self._close_master()

    # -- commands --------------------------------------------------------------------------------

    def run(self, command: Sequence[str], *, timeout: float, check: bool = True,
            input: str | None = None, what: str | None = None) -> procs.Completed:  # noqa: A002
        """Run ``command`` (an argument list) on the host and capture its output.

        A failure of ssh itself (exit status 255) raises ServerError; with ``check``, a
        failing command raises ProcessError naming it and the host.
        """
        label = f"{what or os.path.basename(str(command[0]))} on {self.label}"
        done = procs.run(self.argv(command), timeout=timeout, check=False, input=input,
                         what=label, env=self.env())
        return self.judge(done, label=label, check=check)

    def judge(self, done: procs.Completed, *, label: str, check: bool = True) -> procs.Completed:
        """``done`` when it is a success (or ``check`` is off); ServerError when ssh itself
        failed, ProcessError when the command did."""
        if done.returncode == SSH_FAILED:
            raise self._cannot_connect(done.stderr)
        if check and done.returncode != 0:
            detail = procs.tail(done.stderr) or procs.tail(done.stdout)
            raise ProcessError(f"{label} failed with exit status {done.returncode}"
                               + (f": {detail}" if detail else ""),
                               argv=done.argv, returncode=done.returncode, stderr_tail=detail)
        return done

    def shell(self, script: str, *args: str, timeout: float, check: bool = True,
              input: str | None = None, what: str | None = None) -> procs.Completed:  # noqa: A002
        """Run a POSIX shell ``script`` on the host, with ``args`` as $1, $2...: values go
        in as arguments, never pasted into the script."""
        return self.run(["sh", "-c", script, "sh", *args], timeout=timeout, check=check,
                        input=input, what=what or "sh")

    def start(self, script: str, *args: str, what: str) -> procs.Background:
        """Start a shell ``script`` on the host through the master connection, its standard
        input a pipe; collect it with ``.finish()`` and :meth:`judge`."""
        return procs.spawn(self.argv(["sh", "-c", script, "sh", *args]), env=self.env(),
                           what=f"{what} on {self.label}", stdin=True)

    def read_text(self, path: str, *, timeout: float = 60) -> str:
        return self.run(["cat", "--", path], timeout=timeout, what=f"reading {path}").stdout

    def write_text(self, path: str, text: str, *, append: bool = False,
                   timeout: float = 60) -> None:
        """Write ``text`` to ``path`` on the host (through stdin: never on a command line)."""
        self.shell('cat >> "$1"' if append else 'cat > "$1"', path, input=text,
                   timeout=timeout, what=f"writing {path}")

    def stream(self, script: str, *args: str, what: str) -> procs.Background:
        """Start a long-running shell ``script`` on the host; its output is read from
        ``.proc.stdout`` as it comes. Stop it with ``.stop()``: the remote side ends when
        it next writes to the closed channel.

        A stream has a connection of its own (one handshake, not one per sample): through
        the master, the master would hold its channel (and its output pipe) after the
        local ssh ended."""
        argv = [*self._options(), "-o", "ControlPath=none", self.target, "--",
                quote_command(["sh", "-c", script, "sh", *args])]
        return procs.spawn(argv, env=self.env(), what=f"{what} on {self.label}")


def remove_stale() -> list[str]:
    """End the ssh master connections of teiten processes that were killed, found by the
    marked control directories they left (the marker names the teiten process)."""
    notes = []
    for found in sorted(Path(tempfile.gettempdir()).glob(f"{CONTROL_PREFIX}*")):
        try:
            owner = int(json.loads((found / paths.MARKER).read_text())["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not marked: not teiten's
        if psutil.pid_exists(owner):
            continue  # its teiten still runs
        socket = str(found / "master")
        for proc in psutil.process_iter(["name", "cmdline"]):
            if proc.info["name"] == "ssh" and f"ControlPath={socket}" in (proc.info["cmdline"] or []):
                procs.kill_tree(proc.pid)
                notes.append(f"ended leftover ssh connection {proc.pid}")
        if paths.remove_owned(found):
            notes.append(f"removed {found}")
    return notes
