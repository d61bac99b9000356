"""Flower's start-up check: no Flower without strong credentials (issues 8 and 19).

Flower reads its options from the environment (FLOWER_*), a config file (`--conf`,
FLOWER_CONF, or ./flowerconfig.py when present) and its command line, in that order,
with tornado.options: `--basic_auth`, `-basic-auth`, `---basic_auth` are one option, and
`--basic_auth=` sets it to one empty entry, which `Authorization: Basic =` matches. So
the check does not look for flag names: it builds a parser from Flower's own option
definitions and parses what Flower will parse, the way flower.command does, and checks
the basic_auth Flower would run with (config.checks.flower_basic_auth_problems).

`celery -A config …` imports config.celery inside Celery's command group, after Click
has chosen the sub-command, so config.celery calls refuse_an_open_flower() there: the
check runs in the Flower process, and only there (web, worker and beat do not need
Flower's credentials). It reads the process environment as Flower does.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

import click

from config.checks import flower_basic_auth_problems, flower_command_line_problems

ENV_PREFIX = "FLOWER_"  # flower.command.ENV_VAR_PREFIX


class FlowerOptionsError(Exception):
    """Flower could not parse its options either (it would stop with a traceback)."""


def flower_option_parser():
    """A fresh tornado OptionParser with every option Flower defines (flower.options
    defines them on tornado's global parser, with tornado's logging options), so parsing
    here changes nothing Flower will read."""
    import flower.options  # noqa: F401  (defines Flower's options)
    from tornado.options import OptionParser
    from tornado.options import options as tornado_options

    parser = OptionParser()
    for option in tornado_options._options.values():  # as flower.command reads them
        if option.name not in parser:
            parser.define(
                option.name,
                default=option.default,
                type=option.type,
                multiple=option.multiple,
                help=option.help,
                group=option.group_name,
            )
    return parser


def apply_environment(parser, environ: Mapping[str, str]) -> None:
    """FLOWER_<OPTION> variables, as flower.command.apply_env_options applies them."""
    from flower.utils import strtobool

    for key, value in environ.items():
        name = key[len(ENV_PREFIX) :].lower()
        if not key.startswith(ENV_PREFIX) or name not in parser:
            continue
        option = parser._options[name.replace("_", "-")]
        if option.multiple:
            setattr(parser, name, [option.type(part) for part in value.split(",")])
        elif option.type is bool:
            setattr(parser, name, bool(strtobool(value)))
        else:
            setattr(parser, name, option.type(value))


def option_args(parser, argv: list[str]) -> list[str]:
    """The arguments Flower hands to tornado (flower.command.is_flower_option), less
    `--help`, whose only effect is to print and exit."""

    def name(arg: str) -> str:
        return arg.lstrip("-").partition("=")[0].replace("-", "_")

    return [a for a in argv if hasattr(parser, name(a)) and name(a) != "help"]


def flower_basic_auth(argv: list[str], environ: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(the basic_auth entries Flower would run with, the arguments of `argv` that set
    basic_auth) for `celery flower ARGV…` in `environ` and the current folder, parsed as
    flower.command.apply_env_options and apply_options parse them. FlowerOptionsError
    when Flower could not parse them either."""
    from flower.options import DEFAULT_CONFIG_FILE

    try:
        parser = flower_option_parser()
        apply_environment(parser, environ)
        args = ["flower", *option_args(parser, argv)]
        parser.parse_command_line(args, final=False)  # for --conf
        try:
            parser.parse_config_file(os.path.abspath(parser.conf), final=False)
            parser.parse_command_line(args, final=False)
        except FileNotFoundError:
            if parser.conf != DEFAULT_CONFIG_FILE:
                raise
        setters = [a for a in args[1:] if command_line_sets_basic_auth(a)]
    except Exception as exc:  # tornado.options.Error, the config file's own errors, …
        raise FlowerOptionsError(f"{type(exc).__name__}: {exc}") from exc
    return list(parser.basic_auth or []), setters


def command_line_sets_basic_auth(arg: str) -> bool:
    parser = flower_option_parser()
    parser.parse_command_line(["flower", arg], final=False)
    return bool(parser.basic_auth)


def flower_problems(argv: list[str], environ: Mapping[str, str]) -> list[str]:
    """What keeps `celery … flower ARGV…` from starting in `environ`: weak or missing
    credentials by any spelling, credentials on the command line, options that do not
    parse."""
    try:
        entries, setters = flower_basic_auth(argv, environ)
    except FlowerOptionsError as exc:
        return [f"Flower's options do not parse as Flower reads them ({exc})."]
    return flower_command_line_problems(setters) + flower_basic_auth_problems(entries)


def flower_argv(argv: list[str]) -> list[str]:
    """The arguments after the `flower` sub-command in `celery ARGV…`: Celery's group
    options parsed by Click's parser (so `-A flower flower` finds the second one),
    without running their callbacks (`--workdir` changes the folder)."""
    from celery.bin.celery import celery as group

    context = click.Context(group, info_name="celery", resilient_parsing=True)
    _, rest, _ = group.make_parser(context).parse_args(list(argv))
    return rest[1:] if rest[:1] == ["flower"] else []


def refuse_an_open_flower() -> None:
    """Exit with the problems when this process is `celery … flower` and the options
    Flower would run with fail the checks."""
    context = click.get_current_context(silent=True)
    if context is None or context.invoked_subcommand != "flower":
        return
    problems = flower_problems(flower_argv(sys.argv[1:]), os.environ)
    if problems:
        raise SystemExit("Flower does not start:\n  - " + "\n  - ".join(problems))
