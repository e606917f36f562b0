# Sprig production image: web (gunicorn), Celery worker/beat and migrations
# all run from this one image; see docker-compose.yml.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN groupadd --system sprig \
    && useradd --system --gid sprig --home-dir /app --no-create-home \
        --shell /usr/sbin/nologin sprig

WORKDIR /app

# The source tree stays in /app: gunicorn is started with
# -c market/entrypoints/gunicorn_conf.py and `sprig db upgrade` uses migrations/.
COPY . .
RUN pip install . \
    && install -d -o sprig -g sprig /app/var /app/var/exports /app/var/index

USER sprig

EXPOSE 8000

# The default command is the web server: healthy while /readyz says it can serve (the database
# at the migrations' head). Compose gives the worker and beat checks of their own.
HEALTHCHECK --interval=15s --timeout=10s --start-period=30s --retries=3 \
    CMD ["python", "-m", "market.entrypoints.healthcheck", "url", "http://127.0.0.1:8000/readyz"]

# --bind on the command line wins over the config file, so the container
# always listens on all interfaces (the port is published by compose).
CMD ["gunicorn", "-c", "market/entrypoints/gunicorn_conf.py", "--bind", "0.0.0.0:8000", "market.app:create_app()"]
