"""A find on Ray: each round of ``raycomp.find``'s race trained as one Tune experiment of the sweep machinery
(``rounds.py``), the race driven and kept on disk between rounds (``driver.py``)."""
