# A stand-in for postgres:16-bookworm made of Debian packages (Debian 12 ships PostgreSQL 15),
# for machines that cannot reach Docker Hub. It honours what docker/compose.yaml uses of the
# official image: POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB, the data directory
# /var/lib/postgresql/data (a volume), pg_isready, and a fast shutdown on SIGINT.
ARG DEBIAN_IMAGE=cta-local/debian:bookworm
FROM ${DEBIAN_IMAGE}

# No cluster at install time: the entrypoint creates one in the volume on first start.
RUN mkdir -p /etc/postgresql-common/createcluster.d \
    && echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/no-main.conf \
    && apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/postgresql/data /run/postgresql \
    && chown -R postgres:postgres /var/lib/postgresql /run/postgresql

COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
ENV PGDATA=/var/lib/postgresql/data LANG=C.UTF-8
VOLUME /var/lib/postgresql/data
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["postgres-entrypoint"]
