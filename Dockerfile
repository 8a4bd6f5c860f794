# pitcrew: the bot in a slim image, run as a non-root user. Default command: `pitcrew serve`.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssh-client curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 pitcrew

WORKDIR /app
# the locked versions first (a layer that changes only with the lock), then pitcrew itself, non-editable:
# the migrations travel inside the installed package, so /app is not needed at run time
COPY requirements.lock ./
RUN pip install --require-hashes -r requirements.lock
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY handlers ./handlers
COPY services ./services
COPY simhost ./simhost
COPY migrations ./migrations
RUN pip install --no-deps . && rm -rf /app/build

USER pitcrew
WORKDIR /home/pitcrew
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD curl -fsS "http://127.0.0.1:${PITCREW_SLACK__HTTP_PORT:-3000}/healthz" || exit 1
CMD ["pitcrew", "serve"]
