package bundle

import (
	"bytes"
	"context"
	"errors"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// agentSigner signs agent-session statements with k.
func agentSigner(k *signingKey) func([]byte) ([]byte, []byte, error) {
	return func(p []byte) ([]byte, []byte, error) {
		env, err := envelope.Sign(k.s, PayloadType, p)
		return env, nil, err
	}
}

// agentOpener opens envelopes signed by a key of store.
func agentOpener(store *trust.Store) AgentSessionOpener {
	return func(att, material []byte) ([]byte, func(time.Time, string, string) error, error) {
		if material != nil {
			return nil, nil, errors.New("key-signed evidence carries verification material")
		}
		p, _, err := envelope.Open(att, PayloadType, AttestationFile, store)
		return p, nil, err
	}
}

func agentRefused(t *testing.T, err error, want AgentSessionReason) {
	t.Helper()
	var ae *AgentSessionError
	if !errors.As(err, &ae) || ae.Reason != want {
		t.Fatalf("got %v, want reason %s", err, want)
	}
}

// agentFiles unpacks an archive into its files by name.
func agentFiles(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	list, err := archive.Read(bytes.NewReader(data), archive.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, f := range list {
		m[f.Name] = f.Data
	}
	return m
}

// agentRepack writes files as an archive; with k, it re-signs a statement
// whose subjects are the files (a trusted signer signing tampered logs).
func agentRepack(t *testing.T, files map[string][]byte, k *signingKey) []byte {
	t.Helper()
	if k != nil {
		var st AgentSessionStatement
		if err := canonDecode(files[AttestationFile], &st); err != nil {
			t.Fatal(err)
		}
		delete(files, AttestationFile)
		subj := map[string]string{}
		for n, b := range files {
			subj[n] = sum(b)
		}
		st.Subject = subjectList(subj)
		p, err := canon.Marshal(&st)
		if err != nil {
			t.Fatal(err)
		}
		env, _, err := agentSigner(k)(p)
		if err != nil {
			t.Fatal(err)
		}
		files[AttestationFile] = env
	}
	var entries []archive.Entry
	for n, b := range files {
		entries = append(entries, archive.BytesEntry(n, b))
	}
	var buf bytes.Buffer
	if err := archive.Write(&buf, entries); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// canonDecode reads the statement out of an envelope without verifying it.
func canonDecode(env []byte, st *AgentSessionStatement) error {
	_, payload, err := envelope.Parse(env, PayloadType, AttestationFile)
	if err != nil {
		return err
	}
	return strictjson.Decode(payload, st)
}

func TestAgentSessionAccepted(t *testing.T) {
	fx := makeImplemented(t)
	k := newKey(t)
	data, err := ExportAgentSession(fx.runDir, k.s.KeyID(), agentSigner(k))
	if err != nil {
		t.Fatal(err)
	}
	p, err := OpenAgentSession(data, AgentSessionWant{Commit: fx.commit, Repo: "acme/widget"}, agentOpener(storeWith(t, k)))
	if err != nil {
		t.Fatal(err)
	}
	if p.Run != fx.id || p.Implementation != fx.implID || p.Sessions != 1 || p.ToolCalls != 4 || p.Commit != fx.commit || p.Tree != fx.tree {
		t.Fatalf("proof %+v", p)
	}
	// The file form refuses to overwrite.
	out := filepath.Join(t.TempDir(), "a"+AgentSessionSuffix)
	if err := ExportAgentSessionFile(fx.runDir, out, k.s.KeyID(), agentSigner(k)); err != nil {
		t.Fatal(err)
	}
	if err := ExportAgentSessionFile(fx.runDir, out, k.s.KeyID(), agentSigner(k)); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second export over the file: %v", err)
	}
}

func TestAgentSessionHostile(t *testing.T) {
	fx := makeImplemented(t)
	k, other := newKey(t), newKey(t)
	good, err := ExportAgentSession(fx.runDir, k.s.KeyID(), agentSigner(k))
	if err != nil {
		t.Fatal(err)
	}
	want := AgentSessionWant{Commit: fx.commit, Repo: "acme/widget"}
	open := agentOpener(storeWith(t, k))
	implEvents := ImplementationPrefix + fx.implID + "/" + EventsFile
	for _, tc := range []struct {
		name string
		data func() []byte
		want AgentSessionWant
		r    AgentSessionReason
	}{
		{"unsigned", func() []byte {
			f := agentFiles(t, good)
			delete(f, AttestationFile)
			return agentRepack(t, f, nil)
		}, want, AgentSignature},
		{"forged: signed by an untrusted key", func() []byte {
			d, err := ExportAgentSession(fx.runDir, other.s.KeyID(), agentSigner(other))
			if err != nil {
				t.Fatal(err)
			}
			return d
		}, want, AgentSignature},
		{"for another commit", func() []byte { return good }, AgentSessionWant{Commit: strings.Repeat("a", 40), Repo: "acme/widget"}, AgentOtherCommit},
		{"for another repository", func() []byte { return good }, AgentSessionWant{Commit: fx.commit, Repo: "evil/widget"}, AgentOtherRepository},
		{"session log tampered, subjects stale", func() []byte {
			f := agentFiles(t, good)
			f[implEvents] = bytes.Replace(f[implEvents], []byte(`"claude-code"`), []byte(`"claude-codf"`), 1)
			return agentRepack(t, f, nil)
		}, want, AgentMalformed},
		{"session log tampered, re-signed by the trusted key", func() []byte {
			f := agentFiles(t, good)
			f[implEvents] = bytes.Replace(f[implEvents], []byte(`"claude-code"`), []byte(`"claude-codf"`), 1)
			return agentRepack(t, f, k)
		}, want, AgentTampered},
		{"session log cut to its supersession, re-signed", func() []byte {
			f := agentFiles(t, good)
			lines := bytes.SplitAfter(f[implEvents], []byte("\n"))
			f[implEvents] = bytes.Join(append(lines[:2:2], lines[len(lines)-2]), nil)
			return agentRepack(t, f, k)
		}, want, AgentTampered},
		{"implementation run dropped, re-signed", func() []byte {
			f := agentFiles(t, good)
			for n := range f {
				if strings.HasPrefix(n, ImplementationPrefix) {
					delete(f, n)
				}
			}
			return agentRepack(t, f, k)
		}, want, AgentTampered},
		{"a bundle is not agent-session evidence", func() []byte {
			f := agentFiles(t, good)
			var st AgentSessionStatement
			if err := canonDecode(f[AttestationFile], &st); err != nil {
				t.Fatal(err)
			}
			st.PredicateType = PredicateType
			p, _ := canon.Marshal(&st)
			env, _, _ := agentSigner(k)(p)
			f[AttestationFile] = env
			return agentRepack(t, f, nil)
		}, want, AgentMalformed},
		{"garbage", func() []byte { return []byte("not an archive") }, want, AgentMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := OpenAgentSession(tc.data(), tc.want, open)
			agentRefused(t, err, tc.r)
		})
	}
}

func TestAgentSessionExportRefusesPlainRun(t *testing.T) {
	fx := makeRun(t, runOpts{})
	k := newKey(t)
	_, err := ExportAgentSession(fx.runDir, k.s.KeyID(), agentSigner(k))
	var ee *ExportError
	if !errors.As(err, &ee) || ee.Reason != ImplementationMismatch {
		t.Fatalf("export of a run without implemented_by: %v", err)
	}
}

// implementedWithout builds A moved to IMPLEMENTING without any session
// (or, dirty, with one) and B planned on the agent's commit, or on an
// uncommitted change with dirty.
func implementedWithout(t *testing.T, dirty bool) (runDir, commit string) {
	repo, cfile := contractRepo(t, implContract)
	state := filepath.Join(repo, ".proofgate")
	ctx := context.Background()
	popts := run.PlanOptions{RepoDir: repo, StateDir: state, Contract: implContractResolved(t, cfile), Origin: "git:base:.proofgate/contract.yaml", Repo: "acme/widget"}
	a, err := run.Plan(ctx, popts)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if dirty {
		writeSession(t, a.Dir)
	} else {
		lg, err := eventlog.Open(filepath.Join(a.Dir, replay.EventsFile))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lg.Append(replay.TypeState, replay.StateData{From: replay.Planned, To: replay.Implementing, Reason: "agent session"}); err != nil {
			t.Fatal(err)
		}
		lg.Close()
	}
	os.WriteFile(filepath.Join(repo, "agent.txt"), []byte("change\n"), 0o644)
	if !dirty {
		git(t, repo, "add", "-A")
		git(t, repo, "commit", "-q", "-m", "agent")
	}
	popts.ImplementedBy, popts.AllowDirty = a.ID, dirty
	b, err := run.Plan(ctx, popts)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	return b.Dir, git(t, repo, "rev-parse", "HEAD")
}

func TestAgentSessionNeedsSessionAndCommit(t *testing.T) {
	k := newKey(t)
	for _, tc := range []struct {
		name  string
		dirty bool
		r     AgentSessionReason
	}{{"no session recorded", false, AgentNoSession}, {"successor on a dirty tree", true, AgentDirty}} {
		t.Run(tc.name, func(t *testing.T) {
			dir, commit := implementedWithout(t, tc.dirty)
			data, err := ExportAgentSession(dir, k.s.KeyID(), agentSigner(k))
			if err != nil {
				t.Fatal(err)
			}
			_, err = OpenAgentSession(data, AgentSessionWant{Commit: commit, Repo: "acme/widget"}, agentOpener(storeWith(t, k)))
			agentRefused(t, err, tc.r)
		})
	}
}
