"""An exception the release's own code raised during a walk step: a finding, not a kvproof
bug.

Conform calls into SGLang's modules; an exception whose innermost frame inside the loaded
``sglang/`` tree is the release's (a ``raise`` it reached, or an attribute its refactor reads
that no stand-in has yet) is exit 1, with the exception, the upstream file:line and the walk
step. An exception with no frame in the tree is kvproof's own (exit 3, a traceback).
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from kvproof.checker.conform.engine import UpstreamRaised


@dataclass(frozen=True)
class Raised:
    exception: str  # ``ZeroDivisionError: division by zero``
    file: str  # relative to the tree holding ``sglang/``: ``sglang/srt/.../decode.py``
    line: int
    function: str
    step: int  # the walk step (1-based) during which it was raised; 0: before the first
    action: str  # that step, e.g. ``abort(0)``; "setup" / "intake" outside a step

    def line_text(self) -> str:
        where = f"step {self.step} ({self.action})" if self.step else self.action
        return (
            f"SGLang's code raised {self.exception} at {self.file}:{self.line} "
            f"({self.function}) during {where}"
        )


def sglang_root(mods: dict[str, ModuleType]) -> Path:
    """The loaded ``sglang/`` folder (the parent of ``sglang/srt``)."""
    any_real = next(m for m in mods.values() if getattr(m, "__file__", None))
    path = Path(str(any_real.__file__)).resolve()
    while path.name != "sglang":
        path = path.parent
    return path


def upstream_raise(exc: BaseException, root: Path, step: int, action: str) -> Raised | None:
    """The innermost traceback frame inside ``root``, or None (not the release's code)."""
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        file = Path(frame.filename).resolve()
        if file.is_relative_to(root):
            rel = file.relative_to(root.parent).as_posix()
            text = traceback.format_exception_only(type(exc), exc)[-1].strip()
            return Raised(text, rel, frame.lineno or 0, frame.name, step, action)
    return None


def trace_text(exc: BaseException) -> str:
    """The full traceback, for the file written beside the walk's trace."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def as_finding(exc: BaseException, root: Path, during: str = "") -> UpstreamRaised | None:
    """The core's finding (``checker/conform/engine.py::UpstreamRaised``) for an exception
    the release's code raised, or None when it is kvproof's own (it must propagate)."""
    raised = upstream_raise(exc, root, 0, during)
    if raised is None:
        return None
    head = (
        f"SGLang's code raised {raised.exception} at {raised.file}:{raised.line} "
        f"({raised.function})"
    )
    return UpstreamRaised(head, trace_text(exc), during)
