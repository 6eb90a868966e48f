"""``NoEffectWarning``: an algorithm applied to a model it changes nothing in (Composer's
``composer/algorithms/warnings.py``).

Raised by model surgery that finds no target layer (BlurPool on a ViT, ALiBi on a ResNet). A subclass of
``UserWarning``, so existing warning filters still see it; the preflight refuses such a configuration by this
type and reads ``reason``, never the message's wording.
"""

from __future__ import annotations


class NoEffectWarning(UserWarning):
    """``what`` changed nothing, because of ``reason`` (what the model lacks)."""

    def __init__(self, what: str, reason: str) -> None:
        super().__init__(what, reason)
        self.what, self.reason = what, reason

    def __str__(self) -> str:
        return f"{self.what}: {self.reason}"
