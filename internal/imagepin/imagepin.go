// Package imagepin turns an image reference such as golang:1.26 into a
// reference pinned by digest, golang:1.26@sha256:<hex>, for a contract.
//
// Two sources, each behind its own function:
//
//   - Remote.Resolve asks a registry with go-containerregistry: a HEAD of
//     the tag gives the digest (for a multi-arch image, the index digest,
//     so `docker pull NAME:TAG@sha256:...` works on any platform), and a
//     GET by that digest checks that the manifest's bytes hash to it.
//     Images on Docker Hub are asked of the registry mirrors first, in
//     order, then of Docker Hub itself, as dockerd does (a pull-through
//     mirror serves Docker Hub's digests); Remote.Mirrors without
//     Remote.DockerHub never contacts Docker Hub. Every response body is
//     bounded (MaxResponse), and only a sha256 digest of an image manifest
//     or index is accepted.
//   - Local asks a Docker daemon for an image it has: its repo digest for
//     the same repository, else (an image built or imported locally, never
//     pushed) the local form NAME[:TAG]@sha256:<image ID hex>, which names
//     exactly those bytes on that daemon and nowhere else.
package imagepin

import (
	"errors"
	"fmt"
	"strings"
)

// Sources a Pin records.
const (
	SourceRegistry = "registry"       // the image's own registry (Docker Hub for official images)
	SourceMirror   = "mirror"         // a registry mirror standing in for Docker Hub
	SourceLocal    = "local"          // the local daemon's repo digest of the image
	SourceLocalID  = "local-image-id" // the local daemon's image ID: the image has no repo digest
)

// Pin is one image resolved to a digest.
type Pin struct {
	Image     string `json:"image"`                // as asked, e.g. golang:1.26
	Ref       string `json:"ref"`                  // Image@Digest
	Digest    string `json:"digest"`               // sha256:<64 hex>
	Source    string `json:"source"`               // one of the Source constants
	Registry  string `json:"registry,omitempty"`   // the registry host that answered (remote sources)
	MediaType string `json:"media_type,omitempty"` // the manifest's media type (remote sources)
}

// Attempt is one registry asked, and why it did not answer.
type Attempt struct {
	Registry string
	Err      error
}

// UnreachableError: no registry gave a usable answer for Image.
type UnreachableError struct {
	Image    string
	Attempts []Attempt
}

func (e *UnreachableError) Error() string {
	parts := make([]string, len(e.Attempts))
	for i, a := range e.Attempts {
		parts[i] = a.Registry + ": " + a.Err.Error()
	}
	return fmt.Sprintf("image %s: no registry gave its digest (%s)", e.Image, strings.Join(parts, "; "))
}

// Unwrap gives each attempt's error.
func (e *UnreachableError) Unwrap() []error {
	errs := make([]error, len(e.Attempts))
	for i, a := range e.Attempts {
		errs[i] = a.Err
	}
	return errs
}

// NotFound reports whether every registry asked answered that the tag
// does not exist (rather than failing to answer).
func (e *UnreachableError) NotFound() bool {
	for _, a := range e.Attempts {
		if !errors.Is(a.Err, ErrTagNotFound) {
			return false
		}
	}
	return len(e.Attempts) > 0
}

// ErrTagNotFound is wrapped when a registry answers that the tag does not
// exist.
var ErrTagNotFound = errors.New("tag not found")

// ErrBadAnswer is wrapped when a registry answers with something that is
// not the digest of an image manifest or index.
var ErrBadAnswer = errors.New("registry answer refused")
