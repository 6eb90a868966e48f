"""A sweep's numbers, no figures: ``summary`` the one trial type (``TrialSummary``) of the results table,
``results.json``, MLflow and the report; ``configs.summarize_configs`` the one computation of the verdicts
(``verdicts``: the statistics, pure); ``results_files`` results.csv and results.json.

Below ``tracking`` and ``report``, which read and draw these; it imports neither.
"""
