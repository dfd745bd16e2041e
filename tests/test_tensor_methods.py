"""The static list of ``torch.Tensor`` method names against an installed torch (skipped without
one: the lint path never imports torch, so the list is data)."""

from __future__ import annotations

import pytest

from synclint.model.tensor_methods import TENSOR_METHODS, is_opaque_method


def test_tensor_methods_and_other_objects_methods_are_told_apart() -> None:
    for method in ("sum", "softmax", "copy_", "to", "cuda", "backward", "forward", "__call__"):
        assert not is_opaque_method(method), method
    for method in ("generate", "capture", "gather_full_optim_state_dict", "measure", "step"):
        assert is_opaque_method(method), method


def test_list_matches_the_installed_torch() -> None:
    torch = pytest.importorskip("torch")
    public = {
        name
        for name in dir(torch.Tensor)
        if not name.startswith("_") and callable(getattr(torch.Tensor, name, None))
    }
    missing = sorted(public - TENSOR_METHODS)
    # A newer torch may add methods; the list must hold every method of the torch it was made from
    # and nearly all of any other.
    assert len(missing) <= len(public) // 50, missing[:20]
