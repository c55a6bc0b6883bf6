// Package deploy holds what runs Holdover on Kubernetes: the manifests in
// deploy/kubernetes for the image of the repository's Dockerfile. It has no
// code; its tests check the Dockerfile against go.mod and cmd/, and every
// flag, environment variable, file and port the manifests name against the
// binaries and the Secrets they mount (docs/operations.md, "Deploy on
// Kubernetes").
package deploy
