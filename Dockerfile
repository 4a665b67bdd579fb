# sandboxd, built from this repository: Debian 12, the project's own setup script (the
# Debian packages it builds and runs with, PostgreSQL 15 binaries and runsc/crun among
# them), then the daemon alone. compose.yaml runs it next to Kafka and PostgreSQL.
FROM debian:12

ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
COPY . /src
RUN scripts/setup \
 && cmake -S . -B /tmp/build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DSANDBOXD_TESTS=OFF -DSANDBOXD_BENCH=OFF \
 && cmake --build /tmp/build --target sandboxd \
 && install -m 0755 /tmp/build/apps/sandboxd /usr/local/bin/sandboxd \
 && rm -rf /tmp/build

# The data directory (log, runtimes, snapshots, the development token). Keep it on a volume:
# sandboxes persist in it across restarts of the container.
VOLUME /var/lib/sandboxd
# The Prometheus endpoint when run with --metrics-addr 0.0.0.0:9464.
EXPOSE 9464
ENTRYPOINT ["sandboxd"]
CMD ["--data-dir", "/var/lib/sandboxd"]
