"""The preflight tests' user project: ``my_project.cases``, callables that return what a workload check must catch."""

from __future__ import annotations

import pytest
from user_code import CASES_MODULE


@pytest.fixture
def cases(user_project):
    (user_project / "my_project" / "cases.py").write_text(CASES_MODULE)
    return user_project
