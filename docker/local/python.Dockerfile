# A stand-in for python:3.11-slim-bookworm made of Debian packages (Debian 12's Python is
# 3.11), for machines that cannot reach Docker Hub. scripts/compose-smoke builds it on a
# debootstrapped Debian image and passes it to docker/Dockerfile as PYTHON_IMAGE.
ARG DEBIAN_IMAGE=cta-local/debian:bookworm
FROM ${DEBIAN_IMAGE}

ENV LANG=C.UTF-8
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       python3 python3-venv python-is-python3 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
CMD ["python3"]
