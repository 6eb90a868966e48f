"""``raycomp find``: which speed-up recipe should I use on my model? The decisions of the search, pure.

Stages race the candidate methods on paired seeds against the baseline (``raycomp.results.verdicts``): Screen
(each method alone at its defaults), Tune (successive halving over the arguments each method declares in
``tuned_arguments``), Compose (greedy forward: a combination stays only when it beats its best member) and Confirm
(the chosen recipe on fresh seeds: the verdict reported). ``decide.advance`` turns what the trials measured into
the next round; ``raycomp.launch.find`` runs the rounds on Ray, and bench/simulate_find.py runs simulated ones.
docs/find.md explains the stages and the statistics.
"""
