# syntax=docker/dockerfile:1
# The platform image: one image for the operator, the gateway and the Jobs of the chart
# (charts/a01gym values `image.*`). The entrypoint is the `a01gym` command, so a pod's args
# pick the job: `operator run`, `serve ...`, `factory build ...`, `eval ...`.
# Sandbox pods use the slimmer sandbox-image/Dockerfile instead.
#
#   docker build -t ghcr.io/a01gym/a01gym:0.1.0 .
#   docker build --build-arg EXTRAS=k8s,eval,train -t ghcr.io/a01gym/a01gym-train:0.1.0 .
#     (the image the chart's GRPO Job needs: torch, transformers, trl, peft, trackio;
#      EXTRAS=k8s,eval,gpu for vLLM on GPU nodes)

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG EXTRAS=k8s,eval

FROM ${PYTHON_IMAGE} AS build
ARG EXTRAS
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
# Test folders are not compiled: none runs here, and torch's (the train extra) holds a module
# only Python 3.12 parses (torch/testing/_internal/py312_intrinsics.py), which failed the build.
RUN python -m venv /opt/a01gym \
 && /opt/a01gym/bin/pip install ".[${EXTRAS}]" \
 && /opt/a01gym/bin/python -m compileall -q -x '/(tests?|testing)/' /opt/a01gym/lib \
 && /opt/a01gym/bin/a01gym version

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="a01gym" \
      org.opencontainers.image.description="a01gym operator, OpenEnv gateway, factory and jobs" \
      org.opencontainers.image.source="https://github.com/a01gym/a01gym" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 10001 a01gym \
 && useradd --system --uid 10001 --gid 10001 --home-dir /tmp --no-create-home \
      --shell /usr/sbin/nologin a01gym \
 && mkdir -p /scenarios /runs \
 && chown 10001:10001 /scenarios /runs
COPY --from=build /opt/a01gym /opt/a01gym
# The chart runs this read-only with emptyDirs on /tmp and /runs: nothing else is written.
ENV PATH=/opt/a01gym/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    TMPDIR=/tmp \
    MPLCONFIGDIR=/tmp/matplotlib
WORKDIR /tmp
USER 10001:10001
EXPOSE 8000 9090 8081
ENTRYPOINT ["a01gym"]
CMD ["--help"]
