"""The command lines: argument parsing, exit codes and what is printed; the work is in ``raycomp.launch``."""
