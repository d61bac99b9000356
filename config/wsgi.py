from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

from config.startup import settings_or_exit

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
settings_or_exit("web")

application = get_wsgi_application()
