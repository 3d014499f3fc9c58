"""Permissive stand-ins for the ``sglang.*`` modules (and absent third-party packages)
that the decision modules import but never use on the paths conform drives.

A stand-in answers every attribute with another stand-in (cached, so two imports of one
name are the same object), can be subclassed, called, used as a decorator, iterated (empty)
and compared (never equal to anything but itself). It is falsy, so ``if self.enable_x``
takes the plain path. None of this is upstream code: it is the absence of it.
"""

from __future__ import annotations

import abc
import types
from typing import Any, Literal


class _StubMeta(abc.ABCMeta):
    # ABCMeta, so a real ABC (``CommonKVManager``) and a stand-in mixin can share a class.
    def __new__(mcls, name: str, bases: tuple, ns: dict, **kwargs: Any) -> Any:
        return super().__new__(mcls, name, bases, ns)  # ``msgspec.Struct, frozen=True``

    def __getattr__(cls, name: str) -> Any:
        return _child(cls, cls.__name__, name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        # A bare decorator (``@nvtx_method``) hands back the function it decorates.
        if len(args) == 1 and not kwargs and isinstance(args[0], (types.FunctionType, type)):
            return args[0]
        return super().__call__(*args, **kwargs)

    def __getitem__(cls, item: Any) -> Any:
        return cls

    def __iter__(cls) -> Any:
        return iter(())

    def __bool__(cls) -> bool:
        return False

    def __or__(cls, other: Any) -> Any:
        return cls

    __ror__ = __or__


class Stub(metaclass=_StubMeta):
    """An instance of any stand-in class: permissive in the same way."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        child = stub_class(name)()
        object.__setattr__(self, name, child)
        return child

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], types.FunctionType):
            return args[0]
        return Stub()

    def __iter__(self) -> Any:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __bool__(self) -> bool:
        return False

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        return False

    def __lt__(self, other: Any) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__


def stub_class(name: str) -> type:
    return _StubMeta(name.rsplit(".", 1)[-1], (Stub,), {"__qualname__": name})


class StubModule(types.ModuleType):
    """A module whose every attribute is a stand-in class."""

    def __getattr__(self, name: str) -> Any:
        return _child(self, self.__name__, name)


def _child(owner: Any, owner_name: str, name: str) -> Any:
    """A stand-in class for ``owner.name``, cached on the owner (one object per name)."""
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    value = stub_class(f"{owner_name}.{name}")
    setattr(owner, name, value)
    return value


class Struct:
    """``msgspec.Struct`` where msgspec is absent: fields from the class annotations, set
    from keywords or positions (the ACK trackers of 0.5.22+ are Structs)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = [n for k in reversed(type(self).__mro__) for n in getattr(k, "__annotations__", {})]
        for name, value in zip(names, args, strict=False):
            setattr(self, name, value)
        for name, value in kwargs.items():
            setattr(self, name, value)


# Absent third-party modules whose stand-in needs one real behaviour.
SPECIAL: dict[str, dict[str, Any]] = {"msgspec": {"Struct": Struct}}
