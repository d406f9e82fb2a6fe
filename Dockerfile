# The operator image: a static binary on distroless, running as non-root.
#   make docker-build IMG=ghcr.io/kubectl-sched/operator:v0.1.0
FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so source edits reuse the download layer.
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY operator/ operator/
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/operator ./operator

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/operator /operator
USER 65532:65532
ENTRYPOINT ["/operator"]
