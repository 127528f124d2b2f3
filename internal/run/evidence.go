package run

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/replay"
)

// foundReport is a check's structured report as found on its stdout (see
// Structured), and why the line was refused, which is never recorded.
type foundReport struct {
	replay.Structured
	refused string
}

// recorded is what check.finished records of the report: its Structured
// part (a refused line records an empty report, which never passes).
func (s *foundReport) recorded() *replay.Structured {
	if s == nil {
		return nil
	}
	return &s.Structured
}

// Bounds on a structured report.
const (
	maxReportLine = 64 << 10
	maxArtifacts  = 256
	maxArtifact   = 1 << 30
)

// findReport returns the last line of out that is a JSON object with a
// string "status".
func findReport(out []byte) (*foundReport, bool) {
	lines := bytes.Split(out, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := bytes.TrimSpace(lines[i])
		if len(l) == 0 || l[0] != '{' || len(l) > maxReportLine {
			continue
		}
		// The report is an open format: other members are ignored, but
		// member names that collide (a duplicate, or a case variant of
		// status, criteria or artifacts) make the line a refused report,
		// since readers would disagree on what it says.
		var probe struct {
			Status *string `json:"status"`
		}
		if err := strictjson.DecodeOpen(l, &probe); err != nil {
			var se *strictjson.Error
			if errors.As(err, &se) && (se.Kind == strictjson.Duplicate || se.Kind == strictjson.CaseVariant) {
				return &foundReport{refused: se.Error()}, true
			}
			continue
		}
		if probe.Status == nil {
			continue
		}
		var s replay.Structured
		if err := strictjson.DecodeOpen(l, &s); err != nil {
			// A status line whose other fields are malformed is still the
			// report; keep the status so the failure names it.
			return &foundReport{Structured: replay.Structured{Status: *probe.Status}}, true
		}
		return &foundReport{Structured: s}, true
	}
	return nil, false
}

// judgeReport checks a structured report against the criteria mapped to the
// check and the repository. It returns "" when the report proves the check
// passed, else the reason it did not.
func judgeReport(s *foundReport, found bool, want []string, repo string) string {
	if !found {
		return "structured evidence: no JSON report line with a string \"status\" on stdout"
	}
	if s.refused != "" {
		return "structured evidence: report line refused: " + s.refused
	}
	if s.Status != "passed" {
		return fmt.Sprintf("structured evidence: status %q, not \"passed\"", s.Status)
	}
	have := map[string]bool{}
	for _, c := range s.Criteria {
		have[c] = true
	}
	for _, c := range want {
		if !have[c] {
			return fmt.Sprintf("structured evidence: criterion %q not covered", c)
		}
	}
	if len(s.Artifacts) > maxArtifacts {
		return fmt.Sprintf("structured evidence: %d artifacts (at most %d)", len(s.Artifacts), maxArtifacts)
	}
	for i, a := range s.Artifacts {
		if why := checkArtifact(a, repo); why != "" {
			return fmt.Sprintf("structured evidence: artifacts[%d] %q: %s", i, a.Path, why)
		}
	}
	return ""
}

func checkArtifact(a replay.Artifact, repo string) string {
	want := strings.TrimPrefix(a.SHA256, "sha256:")
	if len(want) != 64 {
		return "sha256 is not a hex SHA-256"
	}
	if _, err := hex.DecodeString(want); err != nil || strings.ToLower(want) != want {
		return "sha256 is not a lowercase hex SHA-256"
	}
	p := filepath.FromSlash(a.Path)
	if a.Path == "" || filepath.IsAbs(p) || !filepath.IsLocal(p) {
		return "path escapes the repository"
	}
	root, err := filepath.EvalSymlinks(repo)
	if err != nil {
		return "repository unreadable"
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, p))
	if err != nil {
		return "missing"
	}
	if rel, err := filepath.Rel(root, real); err != nil || !filepath.IsLocal(rel) {
		return "path escapes the repository through a link"
	}
	f, err := bounded.Open(real)
	if err != nil {
		if errors.As(err, new(*bounded.NotRegularError)) {
			return "not a regular file"
		}
		return "unreadable"
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "unreadable"
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxArtifact+1)); err != nil {
		return "unreadable"
	}
	if fi.Size() > maxArtifact {
		return "larger than 1 GiB"
	}
	if hex.EncodeToString(h.Sum(nil)) != want {
		return "digest does not match"
	}
	return ""
}
