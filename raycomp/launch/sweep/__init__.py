"""A Ray Tune sweep of an experiment: a baseline arm plus the method's search space, one trial per sample.

Tune launches Train: each trial (``trial.py``) turns its arm into a ``TrialSpec`` and either trains it
in its own process (``scaling.num_workers: 0``) or runs a ``TorchTrainer`` for it. ``space.py`` is the
one place a sweep section becomes Tune search-space objects, ``tuner.py`` builds or restores the Tuner,
``outcome.py`` turns Tune's results into ``TrialRecord``s for the summary.
"""
