"""The Docker image brings every package the project installs (issue 18, item 6: the
image once left out `api/` and `clock/` and could not start). Read from the
Dockerfile's own lines; tests/system/test_image.py starts what they bring."""

from __future__ import annotations

import tomllib

from tests.support.dockerfile import read_image
from tests.support.processes import ROOT


def installed_packages() -> set[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    return {pattern.rstrip("*").rstrip(".") for pattern in include}


def test_every_installed_package_is_copied_into_the_image():
    copied = {source.rstrip("/") for sources, _ in read_image().copies for source in sources}

    missing = installed_packages() - copied
    assert not missing, f"the Dockerfile does not COPY {sorted(missing)}"


def test_every_copied_path_exists():
    for sources, _ in read_image().copies:
        for source in sources:
            assert (ROOT / source).exists(), f"COPY {source}: not in the repository"


def test_the_image_installs_its_own_package_and_runs_gunicorn():
    image = read_image()
    assert "." in image.pip_install and "gunicorn" in image.pip_install
    assert image.cmd[:2] == ["gunicorn", "config.wsgi"]
