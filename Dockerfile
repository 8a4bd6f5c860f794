# pitcrew: the bot in a slim image, run as a non-root user. Default command: `pitcrew serve`.
# BASE is any Debian-based image with Python 3.11: the public Python image by default; `make image-check` builds
# with `--build-arg BASE=pitcrew-base:bookworm`, a root filesystem made from Debian's packages on the build machine
# (python3, python3-venv, curl, openssh-client; scripts/image_check.py). pitcrew lives in its own venv either way.
ARG BASE=python:3.11-slim
FROM ${BASE}

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/pitcrew/bin:$PATH
# curl (the health check) and ssh are installed only when the base lacks them; `venv` needs python3-venv on Debian
RUN if ! command -v curl >/dev/null || ! command -v ssh >/dev/null; then \
      apt-get update && apt-get install -y --no-install-recommends openssh-client curl \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
 && useradd --create-home --uid 10001 pitcrew \
 && python3 -m venv /opt/pitcrew

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
