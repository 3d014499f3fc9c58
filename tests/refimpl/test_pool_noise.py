"""A pool's seeded noise, drawn once per shape and copied (issue 30), is the draw itself."""

from __future__ import annotations

import torch

from kvproof.refimpl.pool import KVPool, PoolGeometry


def test_every_pool_of_a_shape_holds_its_own_copy_of_the_same_draw() -> None:
    geometry = PoolGeometry(1, 5, 16, 1, 8)
    gen = torch.Generator().manual_seed(3)
    want = torch.randn(geometry.shape, generator=gen)
    want_next = torch.randn((1, 2, 16, 1, 8), generator=gen)  # what a scribble draws next
    first, second = KVPool(geometry, seed=3), KVPool(geometry, seed=3)
    for pool in (first, second):
        assert torch.equal(pool.data, want)
    first.data.zero_()  # a write to one pool reaches neither the other nor a later one
    assert torch.equal(second.data, want)
    assert torch.equal(KVPool(geometry, seed=3).data, want)
    second.scribble(2)  # the generator goes on from where the draw left it
    assert torch.equal(second.data[:, :, 2], want_next)
    assert not torch.equal(KVPool(geometry, seed=4).data, want)
