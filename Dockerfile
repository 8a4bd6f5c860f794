# pitcrew: the bot in a slim image, run as a non-root user. Default command: `pitcrew serve`.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssh-client curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 pitcrew

WORKDIR /app
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY handlers ./handlers
COPY services ./services
COPY simhost ./simhost
COPY migrations ./migrations
RUN pip install -e . && chown -R pitcrew /app

USER pitcrew
WORKDIR /home/pitcrew
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD curl -fsS "http://127.0.0.1:${PITCREW_SLACK__HTTP_PORT:-3000}/healthz" || exit 1
CMD ["pitcrew", "serve"]
