package bundle

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/rogpeppe/go-internal/txtar"
)

// Failure vectors: bundle/testdata/vectors/*.txtar, one verification case
// each, reusable by any verifier (docs/SPEC.md, "Failure vectors"). The
// comment holds "key: value" lines: expect (a refusal reason, or
// accepted), comment, and the policy; the files are trust.json and either
// the bundle's members under bundle/ or, for archive-level cases,
// bundle.tar.gz.base64. Every file's content is followed by one newline
// that is not part of it.

const vectorDir = "testdata/vectors"

// vectorCase is one parsed vector.
type vectorCase struct {
	expect string
	trust  []byte
	bundle []byte // the .tar.gz
	opts   VerifyOptions
}

// The header keys a vector may use, in the order the generator writes them.
var vectorKeys = []string{"expect", "comment", "commit", "tree", "contract", "repo", "allow-dirty", "require-approvals", "now", "witnessed", "subject"}

func parseVector(path string) (*vectorCase, error) {
	a, err := txtar.ParseFile(path)
	if err != nil {
		return nil, err
	}
	h := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(a.Comment)), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok || !contains(vectorKeys, k) || h[k] != "" {
			return nil, fmt.Errorf("header line %q: want one \"key: value\" per known key", line)
		}
		h[k] = v
	}
	vc := &vectorCase{expect: h["expect"]}
	if vc.opts, err = vectorOptions(h); err != nil {
		return nil, err
	}
	var entries []archive.Entry
	for _, f := range a.Files {
		data, ok := bytes.CutSuffix(f.Data, []byte("\n"))
		if !ok {
			return nil, fmt.Errorf("%s: no final newline", f.Name)
		}
		switch name, member := strings.CutPrefix(f.Name, "bundle/"); {
		case member:
			entries = append(entries, archive.BytesEntry(name, data))
		case f.Name == "trust.json":
			vc.trust = data
		case f.Name == "bundle.tar.gz.base64":
			if vc.bundle, err = base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(data)), "")); err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
		default:
			return nil, fmt.Errorf("unknown file %q", f.Name)
		}
	}
	if len(entries) > 0 {
		var buf bytes.Buffer
		if err := archive.Write(&buf, entries); err != nil {
			return nil, err
		}
		vc.bundle = buf.Bytes()
	}
	if vc.expect == "" || vc.trust == nil || vc.bundle == nil {
		return nil, fmt.Errorf("want an expect line, trust.json and a bundle")
	}
	return vc, nil
}

// vectorOptions maps a vector's policy lines to VerifyOptions: no commit
// or tree means any source, no contract any contract.
func vectorOptions(h map[string]string) (VerifyOptions, error) {
	o := VerifyOptions{Commit: h["commit"], Tree: h["tree"], ContractHash: h["contract"], Repo: h["repo"],
		AllowDirty: h["allow-dirty"] == "true"}
	o.AnySource = o.Commit == "" && o.Tree == ""
	o.AnyContract = o.ContractHash == ""
	var err error
	if v := h["require-approvals"]; v != "" {
		if o.RequireApprovals, err = strconv.Atoi(v); err != nil {
			return o, fmt.Errorf("require-approvals: %w", err)
		}
	}
	if o.Now, err = time.Parse(time.RFC3339Nano, h["now"]); err != nil {
		return o, fmt.Errorf("now: %w", err)
	}
	if v := h["witnessed"]; v != "" {
		if o.Witnessed, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return o, fmt.Errorf("witnessed: %w", err)
		}
	}
	if v := h["subject"]; v != "" {
		o.RequireSubjects = []string{v}
	}
	return o, nil
}

// requiredVectors are the outcomes the vectors must cover.
var requiredVectors = []Reason{"accepted", SignatureInvalid, UnknownKey, KeyRevoked, KeyNotValid, SubjectMismatch,
	MissingFile, ExtraFile, ArchiveUnsafe, ChainBroken, PredicateMismatch, CommitMismatch, TreeMismatch,
	ContractMismatch, DirtySource, SigningTimeImplausible, InsufficientApprovals, Malformed, NotAProduct}

func TestFailureVectors(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(vectorDir, "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no vectors in %s: %v", vectorDir, err)
	}
	seen := map[Reason]bool{}
	for _, p := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(p), ".txtar"), func(t *testing.T) {
			vc, err := parseVector(p)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			seen[Reason(vc.expect)] = true
			st, err := trust.Parse(vc.trust, "trust.json")
			if err != nil {
				t.Fatal(err)
			}
			res, err := Verify(bytes.NewReader(vc.bundle), st, vc.opts)
			switch {
			case vc.expect == "accepted" && err != nil:
				t.Fatalf("refused: %v", err)
			case vc.expect == "accepted" && res.RunID == "":
				t.Fatalf("result %+v", res)
			case vc.expect != "accepted" && reasonOf(err) != Reason(vc.expect):
				t.Fatalf("got %q (%v), want %s", reasonOf(err), err, vc.expect)
			}
		})
	}
	for _, r := range requiredVectors {
		if !seen[r] {
			t.Errorf("no vector expects %s", r)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// formatVector renders a vector: header lines in vectorKeys order, then
// trust.json and the bundle's members (or its raw archive), sorted.
func formatVector(h map[string]string, trustJSON []byte, members []archive.File, raw []byte) []byte {
	var c strings.Builder
	for _, k := range vectorKeys {
		if v, ok := h[k]; ok {
			fmt.Fprintf(&c, "%s: %s\n", k, v)
		}
	}
	a := &txtar.Archive{Comment: []byte(c.String())}
	add := func(name string, b []byte) {
		a.Files = append(a.Files, txtar.File{Name: name, Data: append(append([]byte{}, b...), '\n')})
	}
	add("trust.json", trustJSON)
	if raw != nil {
		enc := base64.StdEncoding.EncodeToString(raw)
		var wrapped strings.Builder
		for len(enc) > 76 {
			wrapped.WriteString(enc[:76] + "\n")
			enc = enc[76:]
		}
		wrapped.WriteString(enc)
		add("bundle.tar.gz.base64", []byte(wrapped.String()))
	}
	ms := append([]archive.File{}, members...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
	for _, m := range ms {
		add("bundle/"+m.Name, m.Data)
	}
	return txtar.Format(a)
}
