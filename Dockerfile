# The Holdover binaries in one small static image: holdover, question-worker
# and gateway in /usr/local/bin, no shell, run as a user without rights.
#
#   docker build -t holdover .
#   docker run --rm holdover question-worker -h
#
# deploy/deploy_test.go checks this file against go.mod and cmd/.

# The Go of go.mod's go line, so the image builds what the tests ran.
FROM golang:1.26.8 AS build
WORKDIR /src
# Modules first: their layer is reused until go.mod or go.sum changes.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static: no C library, so the binaries run on an image with nothing else
# in it. The web UI is embedded from the committed web/dist.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/holdover ./cmd/question-worker ./cmd/gateway

# distroless/static: CA certificates, time zones and /etc/passwd, nothing
# more. 65532 is its "nonroot" user, numeric so Kubernetes' runAsNonRoot can
# check it without reading /etc/passwd.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
# No entrypoint: the command names the binary (PATH has /usr/local/bin).
CMD ["holdover", "help"]
