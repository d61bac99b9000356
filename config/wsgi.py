from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

from config.startup import WORKER_BOOT_ERROR, settings_or_exit

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# gunicorn stops on this status; on another it would start the worker again for ever.
settings_or_exit("web", status=WORKER_BOOT_ERROR)

application = get_wsgi_application()
