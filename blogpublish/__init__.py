"""The blog readers see: rendering, the static site and webhooks. Knows nothing of Celery."""
