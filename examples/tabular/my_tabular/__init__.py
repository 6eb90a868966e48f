"""A tabular project raycomp never saw: float features, a regression target or three classes (examples/tabular)."""
