"""Which protocol and which variants a command runs on: kvproof's own, or a user's, under
the variant's assumptions (``protocol_for``).

A user protocol is written with kvproof's DSL in the user's own module and named on the
command line as ``module:attr`` (or ``path/to/file.py:attr``). ``attr`` is a factory
taking a variant's switches and returning a ``Protocol``, or an object with a
``build(switches)`` method. The object, or else its module, may also define:

- ``SWITCHES``: a frozen dataclass type for the protocol's own switches (enumerated values
  in a ``CHOICES`` class attribute); default: kvproof's ``Switches``;
- ``INVARIANTS``: the safety invariant names a variant's ``[expect]`` table must list;
  default: the names the factory's protocol declares (built from each variant's switches);
- ``VARIANTS_DIR``: the protocol's own variants folder, used when ``--variants-dir`` is not
  given; default: kvproof's;
- ``ASSUMPTIONS``: the assumption names its variants may list in ``[assume]``; default:
  kvproof's (``spec/assumptions.py``), whose guards apply to the actions it shares with
  kvproof's handoff.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from kvproof.model.lang.dsl import Protocol
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import (
    VARIANTS_DIR,
    InvariantNames,
    Switches,
    Variant,
    list_variants,
    load_variant,
)

ProtocolFactory = Callable[[Any], Protocol]


def protocol_for(
    variant: Variant,
    factory: ProtocolFactory | None = None,
    without: tuple[str, ...] = (),
    *,
    liveness: bool = False,
) -> Protocol:
    """The protocol a variant's switches configure: kvproof's handoff unless ``factory``,
    under the variant's assumptions less ``without``. A user protocol gets the guards of
    kvproof's assumptions on the actions it shares with kvproof's handoff, and the
    fairness of its fairness assumptions. ``liveness``: kvproof's handoff with a peer that
    may die unless the variant assumes ``prefill_eventually_reports`` (``protocol_of``)."""
    from kvproof.model.handoff import protocol_of  # loads Z3: not before names are checked
    from kvproof.model.handoff.assumptions import active, apply

    if factory is None:
        return protocol_of(variant, without=without, liveness=liveness)
    names = active(variant, without)
    protocol = factory(variant.switches)
    return apply(protocol, names, variant.switches, str(variant.path)) if names else protocol


@dataclass(frozen=True)
class UserProtocol:
    """A protocol from ``--protocol``, with what its variants are validated against."""

    spec: str
    factory: Callable[[Any], Any]
    switches_type: type = Switches
    invariants: InvariantNames = None  # None: kvproof's invariant names
    variants_dir: Path | None = None
    # The assumptions its variants may list (None: kvproof's, realised on the actions the
    # protocol shares with kvproof's handoff; () for a protocol that declares none).
    assumptions: tuple[str, ...] | None = None


def load_protocol(spec: str) -> UserProtocol:
    """``module:attr`` (or ``file.py:attr``) -> the user's protocol and its vocabulary."""
    if ":" not in spec:
        raise KvproofInputError("expected 'module:attr'", f"--protocol {spec}")
    modname, attr = spec.rsplit(":", 1)
    module = _import(modname)
    obj = getattr(module, attr, None)
    if obj is None:
        raise KvproofInputError(f"{modname} has no attribute {attr!r}", "--protocol")
    build = obj.build if hasattr(obj, "build") else obj
    if not callable(build):
        raise KvproofInputError(f"{spec} is not callable", "--protocol")

    def factory(switches: Any) -> Any:
        """``build``, checked to return a kvproof Protocol (one line, not a traceback)."""
        protocol = build(switches)
        if not isinstance(protocol, Protocol):
            raise KvproofInputError(
                f"returned {type(protocol).__name__}, not a kvproof Protocol", f"--protocol {spec}"
            )
        return protocol

    def lookup(name: str) -> Any:
        return getattr(obj, name, getattr(module, name, None))

    switches_type = lookup("SWITCHES") or Switches
    if not (isinstance(switches_type, type) and dataclasses.is_dataclass(switches_type)):
        raise KvproofInputError("SWITCHES must be a dataclass type", f"--protocol {spec}")
    names = lookup("INVARIANTS")
    invariants: InvariantNames
    if names is not None:
        invariants = tuple(names)
    else:
        # The protocol names its invariants once, in the DSL: ask it.
        def invariants(sw: Any) -> tuple[str, ...]:
            return tuple(i.name for i in factory(sw).safety)

    folder, declared = lookup("VARIANTS_DIR"), lookup("ASSUMPTIONS")
    return UserProtocol(
        spec,
        factory,
        switches_type,
        invariants,
        Path(folder) if folder else None,
        tuple(declared) if declared is not None else None,
    )


def factory_of(spec: str | None) -> Callable[[Any], Any] | None:
    """The factory of the user protocol ``spec`` names (None: kvproof's handoff)."""
    return None if spec is None else load_protocol(spec).factory


def resolve_variants(
    names: Sequence[str],
    every: bool,
    folder: Path | None = None,
    protocol: str | UserProtocol | None = None,
) -> list[Variant]:
    """The variants named (or every one in the folder), validated for ``protocol`` (None:
    kvproof's own, its switches and invariants)."""
    user = load_protocol(protocol) if isinstance(protocol, str) else protocol
    vocabulary: tuple[Any, ...] = ()
    if user is not None:
        folder = folder or user.variants_dir
        vocabulary = (user.switches_type, user.invariants, user.assumptions)
    folder = folder or VARIANTS_DIR
    if every:
        return list_variants(folder, *vocabulary)
    return [load_variant(n, folder, *vocabulary) for n in names]


def _import(modname: str) -> ModuleType:
    if modname.endswith(".py"):
        path = Path(modname)
        if not path.is_file():
            raise KvproofInputError("no such file", f"--protocol {modname}")
        name = f"kvproof_user_{path.stem}"
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise KvproofInputError("cannot load this file as a module", f"--protocol {modname}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # the user's module: any failure is bad input
            del sys.modules[name]
            raise KvproofInputError(_import_failure(exc), f"--protocol {modname}") from None
        return module
    # Like ``python -m``: a module in the current directory is importable.
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        return importlib.import_module(modname)
    except Exception as exc:  # syntax errors, bad bytes, a module that raises
        raise KvproofInputError(_import_failure(exc), f"--protocol {modname}") from None


def _import_failure(exc: BaseException) -> str:
    """One line: what went wrong importing the user's module, and where in it."""
    if isinstance(exc, SyntaxError) and exc.lineno:
        return f"cannot import: {exc.msg} ({exc.filename}:{exc.lineno})"
    return f"cannot import: {type(exc).__name__}: {exc}"
