# ProofGate action image: a static proofgate binary on a small base that has
# git (the kernel binds every run to the checkout through the git CLI) and CA
# certificates (GitHub's API and artifact service). It runs as root: the runner
# starts container actions without --user and the workspace it mounts is not
# owned by an unprivileged image user. Checks never run as root: the Docker
# sandbox starts each one as 65534:65534 unless the contract says allow_root.
#
# The runner builds this file before every job when action.yml says
# `image: Dockerfile`; a release builds it once for linux/amd64 and
# linux/arm64 (.goreleaser.yaml), pushes it to GHCR and points action.yml at
# `image: docker://ghcr.io/<owner>/<repo>:vX.Y.Z@sha256:<digest>` instead
# (scripts/release-pin.sh, docs/release.md).

FROM golang:1.26-alpine AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# A release (.goreleaser.yaml) passes what `proofgate version` prints.
ARG VERSION=dev
ARG COMMIT=
ARG DATE=
RUN go build -ldflags="-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}" \
      -o /out/proofgate ./cmd/proofgate

FROM alpine:3.22
# The workspace is owned by the runner's user, not root: trust it explicitly
# (git refuses "dubious ownership" otherwise). System config is protected
# config, which is where safe.directory must come from.
RUN apk add --no-cache git ca-certificates \
 && git config --system --add safe.directory '*'
COPY --from=build /out/proofgate /proofgate
ENTRYPOINT ["/proofgate", "action"]
