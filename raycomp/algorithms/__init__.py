"""Speed-up methods, each a pure function (see ``raycomp.functional``) and a thin Algorithm."""

from raycomp.algorithms.selective_backprop import SelectiveBackprop

__all__ = ["SelectiveBackprop"]
