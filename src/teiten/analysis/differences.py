"""Like with like: every way the servers of a study differ, and whether the study declared it.

PGECons compared versions with everything else held equal. A study file declares its factor
by what it sets differently between its servers (the install, a setting, initdb options,
cores ...); everything else that differs is listed beside it, so that the reader knows what
else the comparison carries: the defaults a new version changed, what initdb chose, the
build's origin and flags, the pgbench that drove each server. The facts come from what
teiten read back from each running server (``ServerRecord.description``), not from what it
asked for.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection, Mapping, Sequence

from teiten.analysis.model import Difference
from teiten.model.results import ServerRecord
from teiten.model.studyrecord import ServerSetup
from teiten.spec.base import size_text
from teiten.spec.servers import PLACE_KEYS, size_keys

# Spec fields that name or place a server rather than configure it.
_NOT_A_FACTOR = {"name", "optional", "resolved", "placement", "ssh_config", "written"}

# Read-back facts and the spec fields that declare them.
_CLUSTER_FACTS = (("data_checksums", "initdb.data_checksums", "initdb"),
                  ("encoding", "initdb.encoding", "initdb"), ("collate", "initdb.locale", "initdb"),
                  ("ctype", "initdb.locale", "initdb"), ("wal_segment_size", "-", "initdb"),
                  ("block_size", "-", "build"))
_BUILD_FACTS = ("CONFIGURE", "CFLAGS", "CC")

# Settings whose spelling changed between versions but not their meaning: the values that mean
# the same (18 made log_connections a list of what to log, '' for none; up to 13,
# password_encryption 'on' meant md5). Such a pair differs in the table as "the same meaning".
SAME_MEANING: dict[str, tuple[frozenset[str], ...]] = {
    "log_connections": (frozenset({"off", "''"}),),
    "password_encryption": (frozenset({"on", "md5"}),),
}
# Settings a version renamed: the old name, the new one and the version that renamed it.
RENAMED = (("min_parallel_relation_size", "min_parallel_table_scan_size", "10"),
           ("wal_keep_segments", "wal_keep_size", "13"),
           ("force_parallel_mode", "debug_parallel_query", "16"))

_MEMORY = {"B": 1, "kB": 1024, "8kB": 8192, "16MB": 16 << 20, "MB": 1 << 20}
_MEMORY_OUT = (("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1024), ("B", 1))
_TIME = {"us": 1, "ms": 1000, "s": 1_000_000, "min": 60_000_000}
_TIME_OUT = (("d", 86_400_000_000), ("h", 3_600_000_000), ("min", 60_000_000),
             ("s", 1_000_000), ("ms", 1000), ("us", 1))


def setting_text(setting: str, unit: str | None) -> str:
    """A setting as ``SHOW`` words it: ``16384`` in ``8kB`` is ``128MB``, ``60000`` ms is
    ``1min``; negative values (which mean "off" or "unset") and fractions stay as they are."""
    if not unit:
        return setting or "''"
    try:
        n = int(setting)
    except ValueError:
        return f"{setting} {unit}"
    scale, out = (_MEMORY, _MEMORY_OUT) if unit in _MEMORY else (_TIME, _TIME_OUT)
    if n <= 0:
        return setting
    if unit not in scale:
        return f"{setting} {unit}"
    base = n * scale[unit]
    name, size = next((name, size) for name, size in out if base % size == 0)
    return f"{base // size}{name}"


def declared(servers: Sequence[ServerRecord]) -> set[str]:
    """The spec fields (dotted: ``install``, ``settings.work_mem``, ``initdb.data_checksums``)
    whose values are not the same for every server: the study's declared factors."""
    return {field for field, _ in declared_values([s.setup for s in servers])}


def origins_across_versions(installs: Mapping[str, tuple[str, str]]) -> dict[str, list[str]]:
    """The servers of each origin (``installs``: server -> (version, origin)), when the study
    compares versions across several origins; empty when one origin builds them all, or when
    the versions are the same (then the origins are what the study compares)."""
    if len({v for v, _ in installs.values()}) < 2 or len({o for _, o in installs.values()}) < 2:
        return {}
    found: dict[str, list[str]] = {}
    for server, (_, origin) in installs.items():
        found.setdefault(origin, []).append(server)
    return found


def declared_values(setups: Sequence[ServerSetup]) -> list[tuple[str, tuple[str, ...]]]:
    """Each spec field that differs between the servers and that the study file wrote, with
    its values as the file writes them (in server order)."""
    return [(k, values) for k, values, written in spec_differences(setups) if written]


def spec_differences(setups: Sequence[ServerSetup]) -> list[tuple[str, tuple[str, ...], bool]]:
    """Each spec field that differs between the servers, with its values and whether the study
    file wrote it for a server at least (the field, or the whole of a key above it, among the
    server's ``written``), not only took the model's default (a guest's boot_timeout). A store
    from before teiten kept what was written: every such field."""
    flat = [_flatten({k: v for k, v in s.fields.items() if k not in _NOT_A_FACTOR}) for s in setups]
    kept = all(s.written is not None for s in setups)
    wrote = {w for s in setups for w in s.written or ()}
    keys = sorted({k for f in flat for k in f})
    return [(k, values, not kept or any(p in wrote for p in _and_above(k))) for k in keys
            for values in [tuple(spec_word(k, f.get(k)) for f in flat)]
            if len(set(values)) > 1]


def spec_word(key: str, value: object) -> str:
    """A value of a server's entry as a study file writes it: a size as ``1GB``, not in bytes;
    a list (an axis's one value) without brackets; "—" where the server has none."""
    if value is None:
        return "—"
    if isinstance(value, list):
        return ", ".join(spec_word(key, v) for v in value)
    if key in size_keys() and isinstance(value, int):
        return size_text(value)
    return _word(value)


def _and_above(key: str) -> list[str]:
    """``vm.memory`` and ``vm``: the key and each key it lies in."""
    parts = key.split(".")
    return [".".join(parts[:n]) for n in range(len(parts), 0, -1)]


def differences(servers: Sequence[ServerRecord]) -> tuple[Difference, ...]:
    """Every difference between the servers, declared ones first, then what the servers
    showed when read back: initdb's choices, settings (a version's defaults among them),
    the build and the pgbench that drove them. Servers never read back (a study that has
    not run) take part with what their spec says."""
    if len(servers) < 2:
        return ()
    fields = spec_differences([s.setup for s in servers])
    factors = {k for k, _, written in fields if written}
    descs = [s.description or {} for s in servers]
    out: list[Difference] = []

    def add(what: str, values: Sequence[object], cause: str) -> None:
        shown = tuple("—" if v is None else _word(v) for v in values)
        if len(set(shown)) > 1:
            out.append(Difference(what, shown, cause))

    def cause_of(*fields: str, otherwise: str) -> str:
        return "declared" if any(f in factors or any(k.startswith(f + ".") for k in factors)
                                 for f in fields) else otherwise

    add("version", [d.get("version") for d in descs],
        cause_of("install", *PLACE_KEYS, otherwise="version"))
    for field, values, written in fields:  # what the file wrote, and the defaults beside it
        if field != "install" and not field.startswith(("settings.", "initdb.")):
            out.append(Difference(field, values, "declared" if written else "default"))
    cluster = [d.get("cluster") or {} for d in descs]
    for fact, field, otherwise in _CLUSTER_FACTS:
        facts = [d.get(fact) for d in descs] if fact == "data_checksums" else [
            c.get(fact) for c in cluster]
        if any(v is not None for v in facts):
            add(fact, facts, cause_of(field, "profile", otherwise=otherwise))
    for field, values, written in fields:
        if written and field.startswith("initdb.") and field not in \
                {"initdb.data_checksums", "initdb.encoding", "initdb.locale"}:
            out.append(Difference(field, values, "declared"))
    out += _setting_differences(descs, factors)
    add("origin", [d.get("origin") for d in descs], "build")
    add("compiler", [_compiler(d.get("version_string")) for d in descs], "build")
    configs = [d.get("pg_config") or {} for d in descs]
    for key in _BUILD_FACTS:
        if all(c.get(key) is not None for c in configs):
            add(f"pg_config {key}", _own_words([str(c[key]) for c in configs]), "build")
    add("pgbench", [d.get("pgbench") for d in descs], "client")
    return tuple(sorted(out, key=lambda d: d.cause != "declared"))


# Build flags that change the code's speed: optimisation level, target CPU, link-time and
# profile-guided optimisation, assertions. Warnings (-W...), -g and the like do not.
_SPEED_FLAG = re.compile(r"^(-O\S*|-march=\S+|-mtune=\S+|-flto\S*|-fprofile-\S+|--enable-cassert)$")


def speed_flags(desc: Mapping[str, object]) -> tuple[str, ...] | None:
    """The build flags of a server's description that change its speed (from pg_config's
    CFLAGS and the CFLAGS its CONFIGURE was given), in order; None when it has no pg_config."""
    config = _mapping(desc.get("pg_config"))
    flags = config.get("CFLAGS")
    if flags is None:
        return None
    tokens = str(flags).split()
    try:
        for arg in shlex.split(str(config.get("CONFIGURE") or "")):
            name, _, value = arg.partition("=")
            tokens += value.split() if name == "CFLAGS" else [arg]
    except ValueError:  # unbalanced quotes: CFLAGS alone
        pass
    found = [t for t in tokens if _SPEED_FLAG.match(t)]
    level = [t for t in found if t.startswith("-O")][-1:]  # the last -O is the one that applies
    return (*level, *sorted({t for t in found if not t.startswith("-O")}))


def _compiler_release(version_string: object) -> str | None:
    """'gcc 4.4.7' from version()'s compiler, without the distribution's package revision
    (a rebuild of one gcc release is the same compiler); the whole text when unrecognised."""
    text = _compiler(version_string)
    if text is None:
        return None
    m = re.search(r"\b(gcc|clang|icc|icx)\b.*?(\d+\.\d+(?:\.\d+)?)", text)
    return f"{m.group(1)} {m.group(2)}" if m else text


def build_changes(before: ServerRecord, after: ServerRecord) -> tuple[tuple[str, str, str], ...]:
    """How the build of ``after`` differs from that of ``before`` in what can change its
    speed: (what, before, after) with what one of origin, compiler, optimisation (the flags
    of :func:`speed_flags`); nothing for builds alike (warning flags and install paths do
    not count)."""
    a, b = before.description or {}, after.description or {}
    out = []
    for what, x, y in (("origin", a.get("origin"), b.get("origin")),
                       ("compiler", _compiler_release(a.get("version_string")),
                        _compiler_release(b.get("version_string")))):
        if x and y and x != y:
            out.append((what, str(x), str(y)))
    fa, fb = speed_flags(a), speed_flags(b)
    if fa is not None and fb is not None and fa != fb:
        out.append(("optimisation", " ".join(fa) or "—", " ".join(fb) or "—"))
    return tuple(out)


def _compiler(version_string: object) -> str | None:
    """'gcc (GCC) 4.4.7 20120313 (Red Hat 4.4.7-23)' from version()'s 'compiled by ...'."""
    m = re.search(r"compiled by (.*?)(?:, \d+-bit)?$", str(version_string or ""))
    return m.group(1) if m else None


def _setting_differences(descs: Sequence[Mapping[str, object]], factors: set[str]) -> list[Difference]:
    """Settings whose values differ. Declared: the study sets them differently; profile: the
    study gives the servers different profiles and a server has it from its configuration; the
    same meaning: values each version spells its own way (SAME_MEANING); the place: teiten
    sets it so for where a server runs (a description's ``placed``); a version's default:
    at least one server has it from its defaults; otherwise set (by the
    profile or the workload) to different values. A setting
    that only some versions have is listed as absent ("—") in the others."""
    if not all("defaults" in d for d in descs):
        return []  # read back before teiten recorded defaults: no honest list
    defaults = [_mapping(d.get("defaults")) for d in descs]
    effective = [{**{k: setting_text(*_split(str(v))) for k, v in own.items()},
                  **{k: read_back(v) for k, v in _mapping(d.get("settings")).items()}}
                 for d, own in zip(descs, defaults, strict=True)]
    out = []
    for name in sorted({k for e in effective for k in e}):
        values = tuple(e.get(name, "—") for e in effective)
        if len(set(values)) < 2:
            continue
        set_by_one = any(name not in own and name in e for own, e in zip(
            defaults, effective, strict=True))
        if f"settings.{name}" in factors:
            cause = "declared"
        elif any(name in placed for d in descs if isinstance(placed := d.get("placed") or (), Collection)):
            cause = "place"
        elif any(set(values) <= same for same in SAME_MEANING.get(name, ())):
            cause = "same-meaning"
        elif any(name not in e for e in effective):
            cause = "version-only"
        elif "profile" in factors and set_by_one:
            cause = "profile"
        elif any(name in own for own in defaults):
            cause = "version-default"
        else:
            cause = "setting"
        out.append(Difference(name, values, cause))
    return out


def _own_words(values: Sequence[str]) -> list[str]:
    """Long build lines (configure options, CFLAGS) as what each has that not every other
    has: ``+--with-icu +-O2``; ``=`` when a server has nothing of its own."""
    words = [shlex.split(v) if v.count("'") % 2 == 0 else v.split() for v in values]
    shared = set.intersection(*(set(w) for w in words)) if words else set()
    return [" ".join(f"+{w}" for w in dict.fromkeys(ws) if w not in shared) or "="
            for ws in words]


def _split(text: str) -> tuple[str, str | None]:
    """``"16384 8kB"`` as stored in a server's defaults: the setting and its unit."""
    setting, _, unit = text.rpartition(" ")
    return (setting, unit) if setting and unit in {**_MEMORY, **_TIME} else (text, None)


def read_back(value: object) -> str:
    """A setting as a server's description read it back (``{"setting", "unit"}``) as people
    read it: ``16384`` in ``8kB`` is ``128MB``."""
    found = _mapping(value)
    unit = found.get("unit")
    return setting_text(str(found.get("setting", "")), None if unit is None else str(unit))


def _mapping(value: object) -> Mapping[str, object]:
    """A mapping of a stored description (none: empty)."""
    if not value:
        return {}
    if isinstance(value, Mapping):
        return value
    raise ValueError(f"a server's stored description holds {value!r:.100} where a mapping belongs")


def _flatten(value: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for key, v in value.items():
        if isinstance(v, Mapping) and v:
            out.update(_flatten(v, f"{prefix}{key}."))
        elif v is not None and v != {} and v != []:
            out[f"{prefix}{key}"] = v
    return out


def _word(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
