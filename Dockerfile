# syntax=docker/dockerfile:1
#
# The shadoweval image: a static, trimmed binary on distroless, running as
# the non-root user 65532. The paths match the Helm chart (charts/shadoweval):
#   /etc/shadoweval/config.yaml       configuration (default: docker/config.yaml)
#   /etc/shadoweval/gold/gold.jsonl   gold set (default: empty)
#   /var/lib/shadoweval               writable data (embedded NATS JetStream store)
# No HEALTHCHECK: Kubernetes probes GET /-/healthy and /-/ready on port 9464.
#
#   docker build -t shadoweval .
#   docker run --rm -p 9464:9464 -v $PWD/gold.jsonl:/etc/shadoweval/gold/gold.jsonl:ro shadoweval

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
ARG TARGETOS TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w" -o /out/shadoweval ./cmd/shadoweval
# The files of the final image, laid out as they will be there.
RUN mkdir -p /out/etc/shadoweval/gold /out/data \
    && cp docker/config.yaml /out/etc/shadoweval/config.yaml \
    && : > /out/etc/shadoweval/gold/gold.jsonl

# distroless/static: CA certificates, tzdata, /etc/passwd with nonroot
# (65532), /tmp; no shell.
FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.title="shadoweval" \
      org.opencontainers.image.description="Deterministic RAG shadow-evaluation sidecar: quality windows, canary gates and alerts from NATS events" \
      org.opencontainers.image.source="https://github.com/shadoweval/shadoweval"
COPY --from=build /out/shadoweval /shadoweval
COPY --from=build /out/etc/shadoweval /etc/shadoweval
COPY --from=build --chown=65532:65532 /out/data /var/lib/shadoweval
USER 65532:65532
WORKDIR /var/lib/shadoweval
EXPOSE 9464
ENTRYPOINT ["/shadoweval"]
CMD ["run", "--config", "/etc/shadoweval/config.yaml"]
