"""Built-in study files reproducing the PGECons reports (METHODS.md), small by default."""

from __future__ import annotations

from pathlib import Path

from teiten.messages import texts, tr
from teiten.model.errors import UserError
from teiten.spec import LoadedStudy, load_file

DIR = Path(__file__).parent
DEFAULT = "quick-fixed-point"


def names() -> list[str]:
    return sorted(p.stem for p in DIR.glob("*.yaml"))


def about(name: str, description: str, lang: str = "en") -> str:
    """A study's description in ``lang``: a built-in study's own, as it ships, from the
    catalogue; anything else (the user's words, a changed copy) as it is."""
    key = f"study.about.{name}"
    if key in texts() and " ".join(description.split()) == tr(key, "en"):
        return tr(key, lang)
    return description


def path_of(name: str) -> Path:
    path = DIR / f"{name}.yaml"
    if not path.is_file():
        raise UserError(f"no built-in study '{name}'; built-in studies are {', '.join(names())}")
    return path


def find(ref: str) -> tuple[LoadedStudy, str]:
    """Load a study from a file path or a built-in name. Returns it and its source label."""
    p = Path(ref)
    if p.is_file():
        return load_file(p), str(p.absolute())
    if ref in names():
        return load_file(path_of(ref)), f"builtin:{ref}"
    if p.suffix in (".yaml", ".yml") or "/" in ref:
        return load_file(p), str(p)  # raises: no such file
    raise UserError(f"'{ref}' is neither a study file nor a built-in study "
                    f"({', '.join(names())})")
