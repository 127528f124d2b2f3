package action

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/review"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/sigstoretest"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// agentContract relaxes for agent work: a pull request whose head an
// agent session produced may be approved by carol (read access); any
// other needs a maintainer. Hiding the evidence only removes the
// relaxation. It pins no agent workflow: key-mode evidence (the job's own
// key) needs none.
const agentContract = `version: 1
name: widget
defaults:
  runtime: process
  timeout: 30s
checks:
  - id: readme
    run: [test, -f, README.md]
approval:
  required: 1
  roles: [write, maintain, admin]
  mode: or
  rules:
    - name: agent-work
      if: {from_agent_session: true}
      requires: {users: [carol]}
    - name: maintainers
      requires: {permissions: [write, maintain, admin]}
`

// evidenceOpts shape the agent workflow's evidence.
type evidenceOpts struct {
	repo   string                               // the run's repository (default acme/widget)
	commit string                               // the agent's commit (default fx.head); "extra" = a new commit on top
	noSess bool                                 // record no session
	sign   func([]byte) ([]byte, []byte, error) // default the job's key
	keyID  string
	mutate func(map[string][]byte) // the archive's files before zipping
}

// agentEvidence plays the agent workflow in a clone of the workspace:
// plan A at the base, record a session, check out the agent's commit,
// plan B implemented_by A there, export the signed archive, and zip it as
// upload-artifact does.
func agentEvidence(t *testing.T, fx *fixture, o evidenceOpts) []byte {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agent")
	git(t, fx.tmp, "clone", "-q", fx.ws, dir)
	git(t, dir, "checkout", "-q", "--detach", fx.base)
	state := filepath.Join(dir, ".proofgate")
	c, err := contract.Load(filepath.Join(dir, ".proofgate", "contract.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	if o.repo == "" {
		o.repo = owner + "/" + repo
	}
	ctx := context.Background()
	popts := run.PlanOptions{RepoDir: dir, StateDir: state, Contract: c, Repo: o.repo}
	a, err := run.Plan(ctx, popts)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	recordSession(t, a.Dir, !o.noSess)
	git(t, dir, "checkout", "-q", "--detach", fx.head)
	if o.commit == "extra" {
		writeFile(t, filepath.Join(dir, "more.txt"), "more\n")
		git(t, dir, "add", "more.txt")
		git(t, dir, "commit", "-q", "-m", "more")
	}
	popts.ImplementedBy = a.ID
	b, err := run.Plan(ctx, popts)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if o.sign == nil {
		priv, err := key.ParsePrivate([]byte(fx.keyPEM), "key")
		if err != nil {
			t.Fatal(err)
		}
		s, err := key.NewSigner(priv)
		if err != nil {
			t.Fatal(err)
		}
		o.sign, o.keyID = keySign(s), s.KeyID()
	}
	data, err := bundle.ExportAgentSession(b.Dir, o.keyID, o.sign)
	if err != nil {
		t.Fatal(err)
	}
	name := b.ID + bundle.AgentSessionSuffix
	if o.mutate != nil {
		files := unpack(t, data)
		o.mutate(files)
		data = pack(t, files)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func keySign(s *key.Signer) func([]byte) ([]byte, []byte, error) {
	return func(p []byte) ([]byte, []byte, error) {
		env, err := envelope.Sign(s, bundle.PayloadType, p)
		return env, nil, err
	}
}

func otherKey(t *testing.T) *key.Signer {
	t.Helper()
	p := filepath.Join(t.TempDir(), "other.pem")
	if _, err := key.Generate(p); err != nil {
		t.Fatal(err)
	}
	s, err := key.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// recordSession moves run dir to IMPLEMENTING and, with session, records
// one ended agent session, as internal/session writes them.
func recordSession(t *testing.T, dir string, session bool) {
	t.Helper()
	lg, err := eventlog.Open(filepath.Join(dir, replay.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	add := func(typ string, data any) {
		if _, err := lg.Append(typ, data); err != nil {
			t.Fatalf("append %s: %v", typ, err)
		}
	}
	add(replay.TypeState, replay.StateData{From: replay.Planned, To: replay.Implementing, Reason: "agent session"})
	if !session {
		return
	}
	owner := replay.Owner{PID: os.Getpid(), Start: 1, BootID: "boot-1", Host: "agent-runner", Created: time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)}
	add(replay.TypeSessionStarted, replay.SessionStartedData{Session: "s-000000000001", Agent: "claude-code", Owner: owner})
	add(replay.TypeSessionEnded, replay.SessionEndedData{Session: "s-000000000001", Reason: "done"})
}

func unpack(t *testing.T, data []byte) map[string][]byte {
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

func pack(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
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

// agentFixture: carol (read access) approved the head, and the
// pull_request job runs.
func agentFixture(t *testing.T) *fixture {
	fx := newFixture(t, agentContract, nil)
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: carol, State: "APPROVED", CommitID: fx.head})
	fx.prEvent()
	return fx
}

// upload lists the evidence as an artifact of the agent workflow's run
// (dispatched on the base: its head_sha is not the agent's commit).
func (fx *fixture) uploadEvidence(zipData []byte, headRepo int64) {
	fx.gh.AddArtifact(owner, repo, githubtest.Artifact{Name: review.AgentSessionArtifactPrefix + fx.head, HeadSHA: fx.base, Data: zipData, HeadRepositoryID: headRepo})
}

func TestAgentSessionRelaxesWhenProven(t *testing.T) {
	fx := agentFixture(t)
	fx.uploadEvidence(agentEvidence(t, fx, evidenceOpts{}), 0)
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	a := res.Decision.AgentSession
	if res.State != replay.Complete || a == nil || !a.Proven || a.Sessions != 1 || a.Implementation == "" || a.Artifact != review.AgentSessionArtifactPrefix+fx.head {
		t.Fatalf("%+v agent session %+v\n%s", res, a, fx.log.String())
	}
	rep, err := run.Audit(filepath.Join(fx.ws, ".proofgate", "runs", res.RunID))
	if err != nil {
		t.Fatal(err)
	}
	if g := rep.Decisions[0].GitHub; g.Login != "carol" || len(g.Rules) != 1 || g.Rules[0].Rule != "agent-work" || g.Rules[0].AgentSession != a.Implementation {
		t.Fatalf("decision %+v", g)
	}
}

func TestAgentSessionHostile(t *testing.T) {
	for _, tc := range []struct {
		name     string
		evidence func(t *testing.T, fx *fixture) []byte
		headRepo int64
		want     string
	}{
		{"no artifact", nil, 0, string(review.AgentNoArtifact)},
		{"forged: signed by another key", func(t *testing.T, fx *fixture) []byte {
			s := otherKey(t)
			return agentEvidence(t, fx, evidenceOpts{sign: keySign(s), keyID: s.KeyID()})
		}, 0, string(bundle.AgentSignature)},
		{"unsigned", func(t *testing.T, fx *fixture) []byte {
			return agentEvidence(t, fx, evidenceOpts{mutate: func(f map[string][]byte) { delete(f, bundle.AttestationFile) }})
		}, 0, string(bundle.AgentSignature)},
		{"bundle for another commit", func(t *testing.T, fx *fixture) []byte {
			return agentEvidence(t, fx, evidenceOpts{commit: "extra"})
		}, 0, string(bundle.AgentOtherCommit)},
		{"bundle for another repository", func(t *testing.T, fx *fixture) []byte {
			return agentEvidence(t, fx, evidenceOpts{repo: "evil/widget"})
		}, 0, string(bundle.AgentOtherRepository)},
		{"session log tampered", func(t *testing.T, fx *fixture) []byte {
			return agentEvidence(t, fx, evidenceOpts{mutate: func(f map[string][]byte) {
				for n, b := range f {
					if strings.HasPrefix(n, bundle.ImplementationPrefix) && strings.HasSuffix(n, bundle.EventsFile) {
						f[n] = bytes.Replace(b, []byte("claude-code"), []byte("claude-codf"), 1)
					}
				}
			}})
		}, 0, string(bundle.AgentMalformed)},
		{"no session recorded", func(t *testing.T, fx *fixture) []byte {
			return agentEvidence(t, fx, evidenceOpts{noSess: true})
		}, 0, string(bundle.AgentNoSession)},
		{"artifact from a fork's run", func(t *testing.T, fx *fixture) []byte {
			return agentEvidence(t, fx, evidenceOpts{})
		}, 99, string(review.AgentFork)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := agentFixture(t)
			if tc.evidence != nil {
				fx.uploadEvidence(tc.evidence(t, fx), tc.headRepo)
			}
			res, err := fx.run()
			mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
			a := res.Decision.AgentSession
			if res.State != replay.AwaitingApproval || res.Recorded != 0 || a == nil || a.Proven || a.Reason != tc.want {
				t.Fatalf("%+v agent session %+v, want reason %s\n%s", res, a, tc.want, fx.log.String())
			}
			if s := strings.ReplaceAll(fx.summary(), `\`, ""); !strings.Contains(s, "from_agent_session is not proven ("+tc.want) {
				t.Fatalf("the summary does not say why from_agent_session is not proven:\n%s", s)
			}
		})
	}
}

// keylessAgentFixture is agentFixture with a keyless job: the trusted
// root of svc on the base branch, the pull_request job's own identity.
func keylessAgentFixture(t *testing.T, svc *sigstoretest.Services) *fixture {
	return keylessAgentFixtureWith(t, svc, pinnedAgentContract, nil)
}

// keylessAgentFixtureWith is keylessAgentFixture with base contract
// baseContract and the pull request's files prFiles.
func keylessAgentFixtureWith(t *testing.T, svc *sigstoretest.Services, baseContract string, prFiles map[string]string) *fixture {
	fx := newFixtureBase(t, baseContract, map[string]string{trustedRootRel: string(svc.TrustedRoot)}, prFiles)
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: carol, State: "APPROVED", CommitID: fx.head})
	delete(fx.env, "INPUT_SIGNING-KEY")
	fx.env["INPUT_SIGNING"] = SigningKeyless
	fx.env["INPUT_FULCIO-URL"], fx.env["INPUT_TSA-URL"], fx.env["INPUT_REKOR-URL"] = svc.FulcioURL, svc.TSAURL, ""
	fx.env["INPUT_TRUSTED-ROOT"] = trustedRootRel
	fx.env[idTokenURLEnv], fx.env[idTokenTokenEnv] = svc.OIDC.RequestEndpoint(reviewIdentity(fx, "pull_request"))
	fx.prEvent()
	return fx
}

// keylessSign signs as the job whose OIDC claims are c.
func keylessSign(t *testing.T, svc *sigstoretest.Services, c githubtest.Claims) (func([]byte) ([]byte, []byte, error), string) {
	t.Helper()
	ms, err := sigstore.NewKeylessSigner(sigstore.KeylessOptions{FulcioURL: svc.FulcioURL, TSAURL: svc.TSAURL, IDToken: svc.OIDC.Token(c)})
	if err != nil {
		t.Fatal(err)
	}
	return func(p []byte) ([]byte, []byte, error) {
		return envelope.SignWithMaterial(context.Background(), ms, bundle.PayloadType, p)
	}, ms.KeyID()
}

// agentClaims is the identity of the agent workflow dispatched on ref.
func agentClaims(ref string) githubtest.Claims {
	return workflowClaims(".github/workflows/agent.yml", ref)
}

// workflowClaims is the identity of workflow file wf of this repository
// dispatched on ref.
func workflowClaims(file, ref string) githubtest.Claims {
	wf := owner + "/" + repo + "/" + file + "@" + ref
	return githubtest.Claims{Repository: owner + "/" + repo, Ref: ref, EventName: "workflow_dispatch", WorkflowRef: wf, JobWorkflowRef: wf}
}

func TestAgentSessionKeylessIdentity(t *testing.T) {
	svc := sigstoretest.Start(t)
	for _, tc := range []struct {
		name   string
		claims func(fx *fixture) githubtest.Claims
		want   string // "" = proven
	}{
		{"the base branch's agent workflow", func(*fixture) githubtest.Claims { return agentClaims("refs/heads/main") }, ""},
		{"the agent workflow of another branch", func(*fixture) githubtest.Claims { return agentClaims("refs/heads/topic") }, string(review.AgentSignerID)},
		{"another workflow of the base branch", func(*fixture) githubtest.Claims {
			return workflowClaims(".github/workflows/release.yml", "refs/heads/main")
		}, string(review.AgentSignerID)},
		{"the pull request's own workflow", func(fx *fixture) githubtest.Claims { return reviewIdentity(fx, "pull_request") }, string(review.AgentSignerID)},
		{"another repository's agent workflow", func(*fixture) githubtest.Claims {
			c := agentClaims("refs/heads/main")
			c.Repository = "evil/widget"
			c.WorkflowRef = "evil/widget/.github/workflows/agent.yml@refs/heads/main"
			c.JobWorkflowRef = c.WorkflowRef
			return c
		}, string(review.AgentSignerID)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := keylessAgentFixture(t, svc)
			sign, id := keylessSign(t, svc, tc.claims(fx))
			fx.uploadEvidence(agentEvidence(t, fx, evidenceOpts{sign: sign, keyID: id}), 0)
			res, err := fx.run()
			a := res.Decision.AgentSession
			if tc.want == "" {
				mustCode(t, res.Code, ExitOK, err, fx.log.String())
				if res.State != replay.Complete || a == nil || !a.Proven {
					t.Fatalf("%+v agent session %+v\n%s", res, a, fx.log.String())
				}
				return
			}
			mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
			if a == nil || a.Proven || a.Reason != tc.want {
				t.Fatalf("agent session %+v, want %s", a, tc.want)
			}
		})
	}
}

// tighteningContract asks more of agent work: hiding the evidence must
// not skip it.
const tighteningContract = `version: 1
name: widget
defaults:
  runtime: process
  timeout: 30s
checks:
  - id: readme
    run: [test, -f, README.md]
approval:
  required: 1
  roles: [write, maintain, admin]
  rules:
    - name: agent-security
      if: {from_agent_session: true}
      requires: {teams: [acme/security]}
    - name: maintainers
      requires: {permissions: [write, maintain, admin]}
`

func TestAgentSessionHiddenEvidenceDoesNotSkipTightening(t *testing.T) {
	fx := newFixture(t, tighteningContract, nil)
	fx.gh.AddTeam("acme", "security")
	fx.gh.SetTeamMember("acme", "security", "dave", "active")
	fx.gh.SetPermission(owner, repo, "dave", githubtest.Permission{Permission: "write"})
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.prEvent()
	res, err := fx.run() // no evidence uploaded: the agent's work, hidden
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	if s := strings.ReplaceAll(fx.summary(), `\`, ""); !strings.Contains(s, "agent-security (0 of 1; @acme/security) (from_agent_session is not proven") {
		t.Fatalf("the summary does not say the tightening holds unproven:\n%s", s)
	}
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: githubtest.User{Login: "dave", ID: 44}, State: "APPROVED", CommitID: fx.head})
	res, err = fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	if res.State != replay.Complete {
		t.Fatalf("%+v", res)
	}
}
