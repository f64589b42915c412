"""A Docker image that holds exactly the study's own install, built once and kept by the engine
(METHODS S5: the container is then the only difference from the server it is compared with).

The image is Debian (this machine's release and apt sources), made with mmdebstrap as the VM
guest's root file system is (:func:`teiten.servers.rootfs.make_root`): the minimal variant,
the Debian packages of the libraries the install loads, the time zones, an account
``postgres`` with the uid and gid of this machine's server account (teiten.host.privileges: the
files a restore into a host directory gives that account are then the container's server's
too) and the install's files at the same absolute paths as here. ``docker import``
turns it into ``teiten-install/<install>:<key>``, whose key is the install's identity,
:data:`RECIPE` and that account's ids: a second study of the same install finds it in the
engine, and a new image of an install replaces its older ones. Nothing is pulled: no registry is needed.

Its entrypoint (:data:`ENTRYPOINT`) does what the official image's does for teiten: as root,
it gives ``$PGDATA`` to ``postgres`` and drops to that account; there it runs initdb once with
the arguments before ``--`` (each an argument of its own, as teiten gave it: no shell splits
or expands them), with trust (as the official image's POSTGRES_HOST_AUTH_METHOD=trust), lets
TCP clients in, and execs the command after ``--`` (``postgres -c ...``).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from teiten.host import paths, privileges, procs, safefs, waiting
from teiten.installs import Install
from teiten.model.errors import ProcessError, ServerError, UserError
from teiten.servers import rootfs

log = logging.getLogger(__name__)

RECIPE = "docker-3"  # change when what goes into an image changes: older images are rebuilt
REPOSITORY = "teiten-install"
LABEL = "teiten.install"  # on every image built here: the install's label (never a run's)
PACKAGES = ("tzdata",)  # besides the libraries: a Debian-built server reads the system's zones
ENTRYPOINT_PATH = "/usr/local/bin/teiten-entrypoint"
ENTRYPOINT = """\
#!/bin/sh
# teiten's entrypoint: teiten-entrypoint INITDB-ARG... -- COMMAND...
# $PGDATA is postgres's; the cluster is made once with the initdb arguments, each one word as
# given (never split again), then the command runs.
set -eu
if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA"
    chown postgres:postgres "$PGDATA"
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
count=0
for word do
    [ "$word" = -- ] && break
    count=$((count + 1))
done
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    (
        # keep the first $count arguments: each is shifted off the front and, if it is one of
        # them, put back at the end
        i=0
        for word do
            shift
            [ "$i" -lt "$count" ] && set -- "$@" "$word"
            i=$((i + 1))
        done
        initdb -D "$PGDATA" -U postgres --auth=trust "$@"
    )
    printf 'host all all all trust\\n' >> "$PGDATA/pg_hba.conf"
fi
shift "$((count + 1))"
exec "$@"
"""


@dataclass(frozen=True)
class Built:
    """An image of an install in the engine."""

    tag: str  # teiten-install/<install>:<key>
    image_id: str
    seconds: float  # what the build took here (0 when the engine had it)


# About what a build takes on a small machine (2 CPUs, Debian's mirror on the network): a study
# of one Docker server took 430 s where its plan, without the build, said 85 s.
BUILD_S = 345.0


def in_engine(install: Install, docker: list[str], env: dict[str, str]) -> bool:
    """Whether the engine has the image of ``install`` already (False when it cannot say)."""
    try:
        return bool(_image_id(tag_of(install), docker, env))
    except (ProcessError, OSError):
        return False


def images_dir() -> Path:
    return paths.home() / "docker-images"


def tag_of(install: Install) -> str:
    """The image's name: the install's label and the key of its files, the recipe and the ids
    its ``postgres`` account is given (:func:`account_ids`)."""
    label = rootfs.install_label(install).lower()
    uid, gid = account_ids()
    recipe = f"{RECIPE}-{uid}.{gid}"
    return f"{REPOSITORY}/{label}:{rootfs.cache_key(install, rootfs.install_dirs(install), recipe)}"


def account_ids() -> tuple[int, int]:
    """The uid and gid of the image's ``postgres``: this machine's server account's, whose the
    files of a host directory are after a restore (teiten.servers.snapshot gives them to it);
    an image is built as root only, where that account exists. (1000, 1000) otherwise: the
    image is then found, never built."""
    account = privileges.server_account()
    return (account.uid, account.gid) if account is not None else (1000, 1000)


def build(install: Install, docker: list[str], env: dict[str, str]) -> Built:
    """The image of ``install`` in the engine that ``docker`` (the CLI's argv) reaches: the
    one there, else built (a minute or two) and imported."""
    tag = tag_of(install)
    found = _image_id(tag, docker, env)
    if found:
        return Built(tag, found, 0.0)
    for program in ("mmdebstrap", "dpkg-query", "ldd", "tar", "groupadd", "useradd"):
        if shutil.which(program) is None:
            raise UserError(f"building a Docker image of an install needs '{program}', which is "
                            "not installed (apt-get install mmdebstrap)")
    if os.geteuid() != 0:
        raise UserError("building a Docker image of an install needs root (mmdebstrap's root "
                        "mode and file owners); run as root, or give the server an 'image:'")
    top = rootfs.cache_top(images_dir(), "Docker images built from installs")
    with rootfs.locked(top):
        found = _image_id(tag, docker, env)
        if found:
            return Built(tag, found, 0.0)
        started = time.monotonic()
        stage = top / f".{tag.replace('/', '_').replace(':', '-')}.{os.getpid()}"
        paths.make_owned(stage, f"Docker image of {install.bindir}, being built", mode=0o700)
        try:
            # safe: the build's own directory (root's, 0700)
            with open(stage / "build.log", "w") as out, \
                    waiting.telling(f"building the Docker image of {install.bindir}", BUILD_S,
                                    log=stage / "build.log"):
                _build(install, tag, stage, out, docker, env)
        except ProcessError as exc:  # its output went to the log, removed with the build
            tail = procs.tail(safefs.read_text(stage / "build.log", limit=1 << 16), 3)
            raise ServerError(f"building the Docker image of {install.bindir} failed: {exc}"
                              + (f": {tail}" if tail else "")) from exc
        finally:
            paths.remove_owned(stage)
        _evict(tag, docker, env)
        image_id = _image_id(tag, docker, env)
        if not image_id:
            raise ServerError(f"docker import made no image {tag}")
        seconds = round(time.monotonic() - started, 1)
        log.info("built the Docker image of %s in %.0f s: %s", install.bindir, seconds, tag)
        return Built(tag, image_id, seconds)


def _build(install: Install, tag: str, stage: Path, out: IO[str], docker: list[str],
           env: dict[str, str]) -> None:
    dirs = rootfs.install_dirs(install)
    root = stage / "root"
    _, _, packages = rootfs.make_root(root, dirs, PACKAGES, out)
    uid, gid = account_ids()
    # The host account's ids, even where the image's Debian has given them to another (-o).
    procs.run(["groupadd", "--root", str(root), "--gid", str(gid), "-o", "postgres"],
              timeout=60, log=out)
    procs.run(["useradd", "--root", str(root), "--uid", str(uid), "--gid", str(gid), "-o",
               "--no-create-home", "--home-dir", "/var/lib/postgresql", "--shell", "/bin/sh",
               "postgres"], timeout=60, log=out)
    owner = rootfs.ids(root, "postgres")
    # safe: below here, everything is in the build's own directory (root's, 0700)
    for directory in ("var/lib/postgresql", "run/postgresql"):
        made = root / directory
        made.mkdir(parents=True, exist_ok=True)  # safe: the build's own directory
        os.chown(made, *owner)  # safe: the same
        made.chmod(0o2775 if directory.startswith("run") else 0o755)  # safe: the same
    rootfs.put(root / ENTRYPOINT_PATH.lstrip("/"), ENTRYPOINT, mode=0o755)
    archive = stage / "root.tar"
    procs.run(["tar", "--numeric-owner", "--xattrs", "-C", str(root), "-cf", str(archive), "."],
              timeout=600, log=out)
    search = ":".join([str(install.bindir), "/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                       "/usr/bin", "/sbin", "/bin"])
    changes = [f"ENV PATH={search}", "ENV LANG=C.UTF-8", f'ENTRYPOINT ["{ENTRYPOINT_PATH}"]',
               'CMD ["postgres"]',
               f"LABEL {LABEL}={rootfs.install_label(install).lower()}",
               f"LABEL teiten.recipe={RECIPE}", f"LABEL teiten.packages={','.join(packages)}"]
    argv = [*docker, "import"]
    for change in changes:
        argv += ["--change", change]
    procs.run([*argv, str(archive), tag], timeout=1800, log=out, env=env,
              what="docker import")


def _image_id(tag: str, docker: list[str], env: dict[str, str]) -> str:
    done = procs.run([*docker, "image", "inspect", "--format", "{{.Id}}", tag], timeout=60,
                     check=False, env=env, what="docker image inspect")
    return done.stdout.strip() if done.returncode == 0 else ""


def _evict(keep: str, docker: list[str], env: dict[str, str]) -> None:
    """Remove the other images of the same install (older recipes, or made before its files
    changed); an image a container still uses stays."""
    repository = keep.rsplit(":", 1)[0]
    done = procs.run([*docker, "images", "--format", "{{.Repository}}:{{.Tag}}", repository],
                     timeout=60, check=False, env=env, what="docker images")
    for name in done.stdout.split():
        if name != keep and name.startswith(repository + ":"):
            procs.run([*docker, "image", "rm", name], timeout=120, check=False, env=env)
