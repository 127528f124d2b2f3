package bundle

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/proofgate/proofgate/kernel/replay"
)

// NotAProduct refuses a bundle that does not attest a file the gate was
// given (WithSubject): no passed check of the run produced a file with its
// digest.
const NotAProduct Reason = "not-a-product"

// PolicySubject is a *PolicyError about a required subject digest.
const PolicySubject PolicyField = "subject"

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// WithSubject requires the file whose SHA-256 is digest (64 lowercase hex)
// to be a product of the run (ADR 0039): a file a passed check declared in
// produces: and the harness read out of its workspace, attested as a
// subject products/<check>/<path>. A digest that is only a bundle member's
// (a check's output stream, the log) does not count: it is refused as
// NotAProduct, as is one the run never produced.
func WithSubject(digest string) PolicyOption {
	return func(p *Policy) { p.requireSubjects = append(p.requireSubjects, digest) }
}

// checkSubjectDigests refuses a malformed WithSubject digest.
func (p *Policy) checkSubjectDigests() error {
	for _, d := range p.requireSubjects {
		if !sha256Hex.MatchString(d) {
			return &PolicyError{PolicySubject, fmt.Sprintf("subject digest %q: want 64 lowercase hex (the file's SHA-256)", clip(d))}
		}
	}
	return nil
}

// checkProducts refuses a run that did not produce every required subject.
// subj is the statement's subjects (name → sha256 hex), which verify has
// already required to be exactly the bundle's files and the run's
// products.
func (p *Policy) checkProducts(subj map[string]string, id string) error {
	for _, d := range p.requireSubjects {
		var members []string
		found := false
		for _, name := range sortedKeys(subj) {
			if subj[name] != d {
				continue
			}
			if strings.HasPrefix(name, ProductPrefix) {
				found = true
				break
			}
			members = append(members, name)
		}
		switch {
		case found:
		case len(members) > 0:
			return refuse(NotAProduct, fmt.Sprintf("sha256 %s is the bundle's own %s, not a file a passed check produced", d, members[0]), id, nil)
		default:
			return refuse(NotAProduct, fmt.Sprintf("sha256 %s is not a product of run %s: no passed check produced a file with it", d, id), id, nil)
		}
	}
	return nil
}

// ProductVerdict is one product of an accepted run, as the verdict lists it.
type ProductVerdict struct {
	Check  string `json:"check"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Products lists the products of s's checks, in run order, then by path.
func Products(s *RunSummary) []ProductVerdict {
	var out []ProductVerdict
	for _, c := range s.Checks {
		for _, p := range c.Products {
			out = append(out, ProductVerdict{Check: c.ID, Path: p.Path, SHA256: strings.TrimPrefix(p.Digest, "sha256:"), Size: p.Size})
		}
	}
	return slices.Clip(out)
}

// ProductRecords are ps as the log records them, for run.WriteProducts.
func ProductRecords(ps []ProductVerdict) []replay.Product {
	out := make([]replay.Product, 0, len(ps))
	for _, p := range ps {
		out = append(out, replay.Product{Path: p.Path, Digest: "sha256:" + p.SHA256, Size: p.Size})
	}
	return out
}
