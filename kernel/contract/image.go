package contract

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/distribution/reference"
)

// An image reference is checked against the distribution reference grammar
// (github.com/distribution/reference, the grammar docker pull uses):
// [registry[:port]/]path[:tag][@algorithm:hex]. A reference that cannot be
// parsed is an *Error at the field that sets it; so is a placeholder such
// as "golang@sha256:<fill in>" that a generated contract leaves to be
// filled in. A reference without a digest is valid but mutable: Warnings
// names it. A digest is either a repository digest (the manifest digest a
// registry serves) or, for an image built locally, the daemon's image ID
// (ADR 0031): the grammar is the same, NAME[:TAG]@sha256:<64 lowercase
// hex>, and which one it is only the daemon can say (docker.LookUp).

// imageProblem says what is wrong with image reference s, or "" when it is
// a valid reference.
func imageProblem(s string) string {
	if strings.ContainsAny(s, "<>") {
		name, _, _ := strings.Cut(s, "@")
		if strings.ContainsAny(name, "<>") || name == "" || len(name) > 128 {
			name = "IMAGE"
		}
		return fmt.Sprintf("%q is a placeholder: pin the real image by digest (docker pull %s, then docker inspect --format '{{index .RepoDigests 0}}' %s prints NAME@sha256:...; an image built locally is pinned by its ID: %s@ and what docker image inspect --format '{{.Id}}' %s prints)", truncate(s, 128), name, name, name, name)
	}
	if _, err := reference.ParseNormalizedNamed(s); err != nil {
		return fmt.Sprintf("%q is not a valid image reference (want [registry/]name[:tag][@sha256:<64 hex>], lowercase name): %s", truncate(s, 128), referenceReason(s, err))
	}
	return ""
}

// sha256Digest is the digest form a pinned reference should carry.
var sha256Digest = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// referenceReason names the grammar's complaint without its wrapping.
func referenceReason(s string, err error) string {
	if _, d, ok := strings.Cut(s, "@"); ok && !sha256Digest.MatchString(d) {
		return "invalid digest (want sha256: and 64 lowercase hex digits)"
	}
	switch {
	case errors.Is(err, reference.ErrNameContainsUppercase):
		return "the repository name must be lowercase"
	case errors.Is(err, reference.ErrNameTooLong):
		return "the repository name is longer than 255 characters"
	case errors.Is(err, reference.ErrTagInvalidFormat):
		return "invalid tag"
	}
	return err.Error()
}

// Warning is a contract that is valid but likely to surprise: the file,
// the field path (as in Error) and what to do.
type Warning struct {
	File string `json:"file,omitempty"`
	Path string `json:"path"`
	Msg  string `json:"message"`
}

// String formats as `contract.yaml: checks[0].image: ...`.
func (w Warning) String() string {
	s := w.File
	if s == "" {
		s = "contract"
	}
	return s + ": " + w.Path + ": " + w.Msg
}

// Warnings names the docker checks whose image is not pinned by digest: a
// tag can be moved to other bytes between two runs of the same contract.
// file is used only in the messages.
func (r *Resolved) Warnings(file string) []Warning {
	var ws []Warning
	for i, c := range r.Checks {
		if c.Runtime != "docker" || c.Image == "" {
			continue
		}
		n, err := reference.ParseNormalizedNamed(c.Image)
		if err != nil {
			continue // Parse refuses it
		}
		if _, pinned := n.(reference.Digested); pinned {
			continue
		}
		ws = append(ws, Warning{File: file, Path: fmt.Sprintf("checks[%d].image", i),
			Msg: fmt.Sprintf("%q is not pinned by digest: a tag can move to other bytes; pin it as %s@sha256:<digest>: proofgate doctor prints the exact reference (a pulled image's repository digest, or a locally built image's ID)",
				c.Image, c.Image)})
	}
	return ws
}
