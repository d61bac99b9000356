FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
COPY pyproject.toml README.md ./
# Every package pyproject.toml installs (tests/unit/test_dockerfile.py holds it).
COPY config config
COPY api api
COPY blogpublish blogpublish
COPY digest digest
COPY publishing publishing
COPY work work
COPY manage.py ./
RUN pip install --no-cache-dir . gunicorn \
 && useradd --create-home blog && mkdir -p /app/var/site /app/var/flower && chown -R blog /app/var
# /app/var/site and var/flower exist and are the blog user's, so volumes mounted there start so too.
USER blog
# DEBUG is off unless set: give SECRET_KEY (50+ characters) at run time.
CMD ["gunicorn", "config.wsgi", "--bind", "0.0.0.0:8000", "--workers", "2", "--threads", "4"]
