"""The training loop around the core: the ``Trainer`` (fit/epoch/batch, stop decisions), the model interface it
drives (``model.py``), batching and DataLoader workers, DDP, one evaluation, checkpoints (files, payload format,
``required_on_load``), RNG state, and the ``profile:`` callback. Imports only ``core`` and ``base``."""
