"""cluster.yaml is checked offline with the functions `ray up` itself runs before touching a cloud."""

import copy
from pathlib import Path

import pytest
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

CLUSTER = yaml.safe_load((Path(__file__).parents[2] / "cluster.yaml").read_text())


def check(config):
    validate_config(prepare_config(copy.deepcopy(config)))


def test_cluster_yaml_is_valid_for_ray_up():
    check(CLUSTER)
    types = CLUSTER["available_node_types"]
    assert types[CLUSTER["head_node_type"]]["resources"]["trial_slot"] >= 1
    assert any(t["resources"].get("GPU", 0) >= 1 for t in types.values())
    assert "--dashboard-host=127.0.0.1" in " ".join(CLUSTER["head_start_ray_commands"])
    # Token auth on: `ray start` enables it only in token mode, with the token copied to every node.
    starts = CLUSTER["head_start_ray_commands"] + CLUSTER["worker_start_ray_commands"]
    assert all("RAY_AUTH_MODE=token ray start" in command for command in starts if "ray start" in command)
    assert "disabled" not in yaml.safe_dump(CLUSTER)
    assert "~/.ray/auth_token" in CLUSTER["file_mounts"]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda c: c.update(max_worker=3),  # misspelt key
        lambda c: c.update(head_node_type="nope"),
        lambda c: c["available_node_types"]["gpu_worker"].pop("resources"),
        lambda c: c["available_node_types"]["gpu_worker"]["resources"].update(GPU=0.5),
    ],
)
def test_the_check_catches_mistakes(mutate):
    broken = copy.deepcopy(CLUSTER)
    mutate(broken)
    with pytest.raises(Exception):  # noqa: B017 - jsonschema, ValueError: whatever Ray raises
        check(broken)
