#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    from config.startup import manage_py_options, settings_or_exit

    manage_py_options(sys.argv)
    if sys.argv[1:2] not in ([], ["help"], ["--help"], ["-h"], ["version"], ["--version"]):
        settings_or_exit("manage.py")

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
