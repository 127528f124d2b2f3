package review

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/handoff"
	"github.com/proofgate/proofgate/kernel/contract"
)

// zipOf zips files as upload-artifact does.
func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for n, b := range files {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(b))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func reasonOf(err error) bundle.AgentSessionReason {
	var ae *bundle.AgentSessionError
	if errors.As(err, &ae) {
		return ae.Reason
	}
	return ""
}

func TestOpenAgentZipMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, detail string
		data         []byte
	}{
		{"not a zip", "", []byte("not a zip")},
		{"empty", "holds 0 files", zipOf(t, nil)},
		{"two files", "holds 2 files", zipOf(t, map[string]string{"a" + bundle.AgentSessionSuffix: "a", "b" + bundle.AgentSessionSuffix: "b"})},
		{"wrong name", `holds "run.tar"`, zipOf(t, map[string]string{"run.tar": "x"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := OpenAgentZip(tc.data, bundle.AgentSessionWant{Commit: "c", Repo: "o/r"}, nil)
			if reasonOf(err) != bundle.AgentMalformed || !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("err %v, want %s with %q", err, bundle.AgentMalformed, tc.detail)
			}
		})
	}
}

func TestAgentEvidenceTriesTheNewest(t *testing.T) {
	var tried []int64
	download := func(_ context.Context, id int64) ([]byte, error) {
		tried = append(tried, id)
		if id == 1 {
			return nil, errors.New("gone")
		}
		return []byte("not a zip"), nil
	}
	f := agentEvidence(context.Background(), "art", []int64{1, 2, 3, 4, 5}, download, bundle.AgentSessionWant{}, nil)
	if len(tried) != MaxAgentTries || f.Proven || f.Artifact != "art" || f.Reason != string(bundle.AgentMalformed) {
		t.Fatalf("tried %v, fact %+v", tried, f)
	}
	f = agentEvidence(context.Background(), "art", []int64{1}, download, bundle.AgentSessionWant{}, nil)
	if f.Reason != string(AgentAPI) || !strings.HasPrefix(f.Detail, "download art: gone") {
		t.Fatalf("fact %+v", f)
	}
}

func TestAgentRefusal(t *testing.T) {
	f := AgentRefusal(AgentRefuse(AgentFork, "%d from a fork", 2), "art")
	if f != (AgentSession{Reason: string(AgentFork), Detail: "2 from a fork", Artifact: "art"}) {
		t.Fatalf("typed: %+v", f)
	}
	f = AgentRefusal(errors.New("boom"), "art")
	if f != (AgentSession{Reason: string(AgentAPI), Detail: "boom", Artifact: "art"}) {
		t.Fatalf("untyped: %+v", f)
	}
}

func TestCheckAgentPin(t *testing.T) {
	for _, pin := range []*contract.AgentSessions{nil, {}, {Workflow: "../agent.yml"}, {Workflow: ".github/workflows/a/b.yml"}} {
		if err := CheckAgentPin(pin); reasonOf(err) != AgentNoPin {
			t.Errorf("%+v: %v, want %s", pin, err, AgentNoPin)
		}
	}
	if err := CheckAgentPin(&contract.AgentSessions{Workflow: ".github/workflows/agent.yml"}); err != nil {
		t.Fatal(err)
	}
}

func TestKeyAgentOpener(t *testing.T) {
	p := filepath.Join(t.TempDir(), "k.pem")
	if _, err := key.Generate(p); err != nil {
		t.Fatal(err)
	}
	s, err := key.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Sign(s, bundle.PayloadType, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	open := KeyAgentOpener(handoff.KeyVerifiers{ID: s.KeyID(), Pub: s.Public})
	if got, check, err := open(env, nil); err != nil || string(got) != `{}` || check != nil {
		t.Fatalf("open: %q %v", got, err)
	}
	if _, _, err := open(env, []byte("material")); reasonOf(err) != bundle.AgentMalformed {
		t.Fatalf("with material: %v", err)
	}
	if _, _, err := KeyAgentOpener(handoff.KeyVerifiers{ID: "other"})(env, nil); err == nil {
		t.Fatal("another key opened the evidence")
	}
}

func TestKeylessAgentOpenerNeedsMaterial(t *testing.T) {
	if _, _, err := KeylessAgentOpener(nil)([]byte("{}"), nil); reasonOf(err) != bundle.AgentSignature {
		t.Fatalf("%v, want %s", err, bundle.AgentSignature)
	}
}

func TestAgentKeylessRefusal(t *testing.T) {
	for in, want := range map[error]bundle.AgentSessionReason{
		&sigstore.VerifyError{Reason: sigstore.IdentityMismatch}:   AgentSignerID,
		&sigstore.VerifyError{Reason: sigstore.CertificateInvalid}: AgentUntrusted,
		&sigstore.VerifyError{Reason: sigstore.TimestampInvalid}:   AgentUntrusted,
		&sigstore.VerifyError{Reason: sigstore.TlogInvalid}:        AgentUntrusted,
		errors.New("bad signature"):                                bundle.AgentSignature,
	} {
		if got := reasonOf(agentKeylessRefusal(in)); got != want {
			t.Errorf("%v: %s, want %s", in, got, want)
		}
	}
}

func TestAgentVerifiersBadRoot(t *testing.T) {
	_, err := AgentVerifiers([]byte("not a root"), "root.json", sigstore.DefaultIssuer, "o/r", ".github/workflows/agent.yml", "main")
	if reasonOf(err) != AgentNoVerifier || !strings.HasPrefix(err.(*bundle.AgentSessionError).Detail, "root.json: ") {
		t.Fatalf("%v", err)
	}
}
