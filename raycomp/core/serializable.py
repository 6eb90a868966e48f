"""``Serializable``: what a checkpoint saves and restores, as Composer's ``composer.core.serializable``."""

from __future__ import annotations

from typing import Any


class Serializable:
    """``state_dict()`` gives what must survive a checkpoint, ``load_state_dict(state)`` restores it.

    The base of ``State``, ``Algorithm`` and ``Callback``, as in Composer; by default there is nothing to save. A
    checkpoint is read with ``torch.load(weights_only=True)``, so a state holds plain data and tensors only, never
    objects to rebuild.
    """

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        del state  # nothing saved, nothing to restore
