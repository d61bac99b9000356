"""Issue 19, finding 7: `-basic_auth=` (one dash) passed Flower's start-up check, and
`Authorization: Basic =` was then let in. The check now parses Flower's options as
Flower does (config/flower.py): environment, config file, command line, every spelling
tornado.options takes.

Each case is checked twice: config.flower's verdict, and that its basic_auth is the one
Flower's own parsing (flower.command.apply_env_options, apply_options) arrives at.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from config.flower import flower_basic_auth, flower_problems
from tests.support import processes
from tests.support.waiting import assert_flower_refuses_to_start

GOOD = "flower:correct-horse-battery"
ENV = {"FLOWER_BASIC_AUTH": GOOD}
CMD = "on the command line"
EMPTY = "must be user:password"
UNSET = "FLOWER_BASIC_AUTH is not set"
SHORT = "at least 12 characters"
PARSE = "do not parse"

# (case id, Flower's arguments, environment, ./flowerconfig.py or None, refused because)
CASES = [
    ("env-good", [], ENV, None, None),
    ("env-good-usual-flags", ["--address=127.0.0.1", "--port=5555"], ENV, None, None),
    ("env-unset", [], {}, None, UNSET),
    ("env-empty", [], {"FLOWER_BASIC_AUTH": ""}, None, UNSET),
    ("env-short", [], {"FLOWER_BASIC_AUTH": "flower:short"}, None, SHORT),
    ("env-empty-second-entry", [], {"FLOWER_BASIC_AUTH": GOOD + ","}, None, EMPTY),
    ("env-no-user", [], {"FLOWER_BASIC_AUTH": ":correct-horse-battery"}, None, EMPTY),
    # the command line overrides the environment, in every spelling tornado takes
    ("two-dashes-underscore", ["--basic_auth="], ENV, None, CMD),
    ("two-dashes-dash", ["--basic-auth="], ENV, None, CMD),
    ("one-dash-underscore", ["-basic_auth="], ENV, None, CMD),  # the finding
    ("one-dash-dash", ["-basic-auth="], ENV, None, CMD),
    ("three-dashes", ["---basic_auth="], ENV, None, CMD),
    ("strong-on-command-line", ["--basic_auth=" + GOOD], {}, None, CMD),
    ("after-a-stray-word", ["stray", "-basic_auth="], ENV, None, CMD),  # Flower drops it
    ("after-help-false", ["--help=false", "-basic_auth="], ENV, None, CMD),
    # `--basic_auth VALUE`: Flower drops VALUE, then fails on the flag without one
    ("separate-argument", ["--basic_auth", GOOD], ENV, None, PARSE),
    # a config file (./flowerconfig.py, --conf, FLOWER_CONF) overrides the environment
    ("conf-default-empty-entry", [], ENV, "basic_auth = ['']", UNSET),
    ("conf-default-empty-string", [], ENV, "basic_auth = ''", UNSET),
    ("conf-default-empty-list", [], ENV, "basic_auth = []", UNSET),
    ("conf-default-dash-name", [], ENV, "globals()['basic-auth'] = ['a:']", EMPTY),
    ("conf-default-good", [], {}, f"basic_auth = [{GOOD!r}]", None),
    ("conf-flag", ["--conf=other.py"], ENV, None, EMPTY),
    ("conf-flag-one-dash", ["-conf=other.py"], ENV, None, EMPTY),
    ("conf-env", [], {**ENV, "FLOWER_CONF": "other.py"}, None, EMPTY),
    ("conf-missing", ["--conf=missing.py"], ENV, None, PARSE),
]
OTHER_CONF = "basic_auth = 'flower:'"


def prepare(tmp_path, monkeypatch, env: dict, conf: str | None) -> None:
    monkeypatch.chdir(tmp_path)
    if conf is not None:
        (tmp_path / "flowerconfig.py").write_text(conf)
    (tmp_path / "other.py").write_text(OTHER_CONF)


@pytest.mark.parametrize(
    ("argv", "env", "conf", "refused"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_flower_check__every_spelling(tmp_path, monkeypatch, argv, env, conf, refused):
    prepare(tmp_path, monkeypatch, env, conf)

    problems = flower_problems(argv, env)

    if refused is None:
        assert problems == []
    else:
        assert any(refused in p for p in problems), problems


def flowers_own_parse(tmp_path, cases) -> list:
    """basic_auth as Flower's own functions leave it, for each (argv, env, folder), in a
    fresh interpreter (they set tornado's global options and logging)."""
    script = """
import json, os, sys
from tornado.options import options, _Option
import flower.command as command
results = []
for argv, env, folder in json.loads(sys.stdin.read()):
    for option in options._options.values():
        option._value = _Option.UNSET
    for key in [k for k in os.environ if k.startswith("FLOWER_")]:
        del os.environ[key]
    os.environ.update(env)
    os.chdir(folder)
    try:
        command.apply_env_options()
        command.apply_options("flower", argv)
        results.append(list(options.basic_auth or []))
    except Exception as exc:
        results.append("error: " + type(exc).__name__)
print(json.dumps(results))
"""
    answer = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(answer.stdout.splitlines()[-1])


def test_flower_check__reads_basic_auth_as_flower_does(tmp_path, monkeypatch):
    cases, ours = [], []
    for number, (_, argv, env, conf, _refused) in enumerate(CASES):
        folder = tmp_path / str(number)
        folder.mkdir()
        with monkeypatch.context() as m:
            prepare(folder, m, env, conf)
            try:
                ours.append(flower_basic_auth(argv, env)[0])
            except Exception as exc:
                ours.append(f"error: {type(exc.__cause__).__name__}")
        cases.append((argv, env, str(folder)))

    assert ours == flowers_own_parse(tmp_path, cases)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["-basic_auth="], CMD),  # issue 19's spelling, with strong FLOWER_BASIC_AUTH
        (["--conf={conf}"], EMPTY),  # a config file that empties it
    ],
    ids=["one-dash", "config-file"],
)
def test_real_flower__bad_spelling_does_not_start(tmp_path, argv, named):
    (tmp_path / "weak.py").write_text("basic_auth = ['flower:']")
    port = processes.free_port()
    args = [a.format(conf=tmp_path / "weak.py") for a in argv]
    proc = processes.spawn(
        "flower",
        processes.celery_cmd("flower", "--address=127.0.0.1", f"--port={port}", *args),
        env=ENV,
    )
    assert_flower_refuses_to_start(proc, named)
