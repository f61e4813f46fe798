# mdboost as a container: watch, forecast and tune Linux md RAID (Synology DSM 7 Container Manager).
#
# Base: python:3.11-slim pinned by digest (Docker Hub's multi-arch index), so a rebuild gets the
# same bytes; a newer one is `docker buildx imagetools inspect python:3.11-slim`. PYTHON_IMAGE
# overrides it where no registry is reachable (tests/test_container.py builds on a local stand-in).

# linux/amd64 and linux/arm64: no compiler in the image and pip takes wheels only. Every pinned
# dependency is pure Python except pydantic-core and MarkupSafe, which publish manylinux wheels for
# x86_64 and aarch64 (tests/test_container.py resolves the set for both on PyPI).

ARG PYTHON_IMAGE=python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /app
# Dependencies first, from the hash-locked list (pip-compile --generate-hashes), so that a source
# change reuses this layer; a download whose hash differs from the lock fails the build.
COPY requirements.lock ./
RUN python -m venv /venv \
 && /venv/bin/pip install --only-binary=:all: --require-hashes --no-deps --requirement requirements.lock
# Build the wheel (it carries migrations/, presets/, templates/ and static/ inside the app package)
# and install only it: the venv is the whole application, no source tree beside it.
# .dockerignore keeps out what the wheel does not need.
COPY . .
# pip and setuptools are not needed at run time: 15 MB less.
RUN /venv/bin/pip wheel --no-deps --wheel-dir /tmp/wheels . \
 && /venv/bin/pip install --no-deps /tmp/wheels/mdboost-*.whl \
 && /venv/bin/python -m compileall -q /venv/lib \
 && /venv/bin/python -m pip uninstall --yes --quiet pip setuptools

FROM ${PYTHON_IMAGE}
# No USER: the app runs as root on purpose. md's sysfs attributes and /proc/sys/dev/raid are
# root-owned and the kernel wants CAP_SYS_ADMIN for every md attribute write (md_attr_store in
# drivers/md/md.c), so a non-root user could only ever monitor. Without `privileged: true` (or
# cap_add SYS_ADMIN) root in here cannot change a knob either; the app then logs that tuning is off.
ENV PATH=/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    MDBOOST_DB=/data/mdboost.db
COPY --from=build /venv /venv
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4).status != 200)"]
# Exec form, no shell and no init: mdboost (uvicorn) is PID 1 and receives SIGTERM itself. It stops
# accepting requests, finishes the sample in flight, closes the database and exits well within
# Docker's 10 s stop timeout; it starts no child processes, so there are no zombies to reap.
STOPSIGNAL SIGTERM
ENTRYPOINT ["mdboost"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]
