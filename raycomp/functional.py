"""The algorithms as plain functions, for use in your own training loop (``import raycomp.functional as rf``)."""

from raycomp.algorithms.selective_backprop import select_using_loss, should_selective_backprop

__all__ = ["select_using_loss", "should_selective_backprop"]
