"""One real local Ray for the whole test run (started on first use), as the CLIs start it."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def local_ray():
    import ray

    from raycomp.launch.runner import init_ray

    init_ray(num_cpus=2)
    yield ray
    ray.shutdown()
