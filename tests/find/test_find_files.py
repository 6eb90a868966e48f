"""What a find writes (raycomp.find.files): the recipe.yaml it uploads to MLflow holds no credentials (M1 of
../shared/notes/reliability-defects.md: the tracking URI's password and token were in it, in clear)."""

from __future__ import annotations

import yaml
from findkit import simulated_find


def test_the_recipe_file_keeps_the_tracking_server_but_not_its_password_or_token(tmp_path):
    uri = "http://alice:s3cretPW@127.0.0.1:5171/?token=T0KENabc"
    answer = simulated_find(tmp_path / "found", {"m1": 1.5}, sections={"tracking": {"tracking_uri": uri}})
    assert answer.recommended is not None
    text = (tmp_path / "found" / "recipe.yaml").read_text()
    assert "s3cretPW" not in text and "T0KENabc" not in text
    assert yaml.safe_load(text)["tracking"]["tracking_uri"] == "http://127.0.0.1:5171/"  # the server, still named
