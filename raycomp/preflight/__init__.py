"""The workload check, between the config (data) and the results: the user's model and data built and run once per
command, on the driver, before Ray starts; what cannot run is one line at its key (``experiment.py``)."""
