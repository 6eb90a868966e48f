"""A user's own project, as raycomp sees it: a model module and a data module, importable by name."""
