"""Shared facts every layer may use: names (``keys``), run-folder paths (``layout``), errors and exit codes,
scratch folders, atomic writes, credential redaction, environment blocks, and two process-wide start-up
fixes (``interrupts``, ``torchvision_shim``). Standard library (and torch for the shim) only; imports no
other raycomp layer."""
