package action

import (
	"strings"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/ci/event"
)

// readSubjects reads input subject: files, relative to the workspace and
// separated by commas or new lines, each of which must be a product of the
// verified run (bundle.WithSubject). Empty requires none.
func readSubjects(f *workflow, in *verifyInputs) *refusal {
	for _, p := range strings.FieldsFunc(f.input("subject"), func(r rune) bool { return r == ',' || r == '\n' }) {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !event.CleanRel(p) {
			return refuseUsage("input subject: %q is not a clean path relative to the workspace", p)
		}
		in.subjects = append(in.subjects, p)
	}
	return nil
}

// subjectDigests hashes the subject files, in order.
func (g *gate) subjectDigests() ([]string, *refusal) {
	var out []string
	for _, p := range g.in.subjects {
		d, err := bounded.SHA256File(g.abs(p))
		if err != nil {
			return nil, refuseUsage("input subject: %v", err)
		}
		out = append(out, d)
	}
	return out, nil
}
