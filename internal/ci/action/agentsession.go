package action

// The from_agent_session fact (ADR 0021, docs/SPEC.md "Agent-session
// evidence"). The agent workflow uploads, as artifact
// AgentSessionArtifactPrefix+<commit>, the signed archive
// bundle.ExportAgentSession made of the run that verified the commit its
// agent produced and the implementation run holding the sessions. The
// approval job lists that artifact name (a hint), keeps the unexpired
// artifacts of workflow runs of this repository (not a fork's head
// repository), and accepts the newest that bundle.OpenAgentSession
// verifies for the pull request's head and this repository:
//
//   - key mode: signed by the job's own signing key (the repository's
//     secret; whoever can read it can forge the fact, as they can forge a
//     bundle);
//   - keyless: verified against the trusted root at input trusted-root,
//     read from the base commit, and pinned to the agent workflow the
//     run's contract names (approval.agent_sessions.workflow; on
//     pull_request and pull_request_review events the base branch's
//     contract, whose hash the run is bound to): SAN and Build Signer
//     https://HOST/OWNER/REPO/<that workflow>@refs/heads/<base>, source
//     repository OWNER/REPO, source ref refs/heads/<base>. A pull request
//     changes neither the base contract, nor the base branch's workflow
//     file, nor the ref Fulcio certifies, so it can neither move the pin
//     nor sign evidence under the pinned identity. No action input names
//     the workflow: the workflow file that sets a job's inputs is the pull
//     request's own. A contract without the pin proves no keyless
//     evidence (AgentNoPin).
//
// Everything else leaves the fact false with a typed reason, recorded in
// the decision. A pull request can always hide evidence; see
// docs/THREAT-MODEL.md "from_agent_session".

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/ci/handoff"
	"github.com/proofgate/proofgate/internal/ci/review"
	"github.com/proofgate/proofgate/kernel/contract"
)

// AgentSessionArtifactPrefix starts the agent-session artifact's name; the
// agent's commit follows.
const AgentSessionArtifactPrefix = "proofgate-agent-session-"

// Reasons the approval job adds to bundle's refusals of agent-session
// evidence.
const (
	AgentNoArtifact bundle.AgentSessionReason = "no-artifact" // no unexpired artifact for the head
	AgentFork       bundle.AgentSessionReason = "artifact-from-fork"
	AgentAPI        bundle.AgentSessionReason = "github-api"       // listing or downloading failed
	AgentNoVerifier bundle.AgentSessionReason = "no-verifier"      // no key, or keyless without a trusted root
	AgentNoPin      bundle.AgentSessionReason = "no-workflow-pin"  // keyless, and the contract has no approval.agent_sessions.workflow
	AgentSignerID   bundle.AgentSessionReason = "signer-identity"  // certified for another workflow, ref or repository
	AgentUntrusted  bundle.AgentSessionReason = "signer-untrusted" // certificate or timestamp not from the trusted root
)

// Bounds on the evidence the approval job reads.
const (
	maxAgentTries    = 3         // newest artifacts tried
	maxAgentArtifact = 256 << 20 // bytes of one downloaded zip
)

// agentFetcher is the job's review.AgentSessionFetcher. pin is the run's
// contract's approval.agent_sessions (nil: unset).
type agentFetcher struct {
	j   *job
	pin *contract.AgentSessions
}

func agentFact(r bundle.AgentSessionReason, format string, args ...any) review.AgentSession {
	return review.AgentSession{Reason: string(r), Detail: fmt.Sprintf(format, args...)}
}

// AgentSession finds and verifies the evidence for head.
func (a agentFetcher) AgentSession(ctx context.Context, head string) review.AgentSession {
	j := a.j
	name := AgentSessionArtifactPrefix + head
	open, err := j.agentOpener(ctx, a.pin)
	if err != nil {
		return asFact(err, name)
	}
	arts, err := j.agentArtifacts(ctx, name)
	if err != nil {
		return asFact(err, name)
	}
	var last review.AgentSession
	for i, art := range arts {
		if i == maxAgentTries {
			break
		}
		zipData, err := artifact.Download(ctx, j.gh, j.owner, j.name, art.ID, maxAgentArtifact)
		if err != nil {
			last = agentFact(AgentAPI, "download %s: %v", name, err)
			continue
		}
		p, err := openAgentZip(zipData, bundle.AgentSessionWant{Commit: head, Repo: j.repo}, open)
		if err != nil {
			last = asFact(err, name)
			continue
		}
		return review.AgentSession{Proven: true, Artifact: name, Run: p.Run, Implementation: p.Implementation, Sessions: p.Sessions}
	}
	last.Artifact = name
	return last
}

func asFact(err error, name string) review.AgentSession {
	var ae *bundle.AgentSessionError
	if errors.As(err, &ae) {
		f := agentFact(ae.Reason, "%s", ae.Detail)
		f.Artifact = name
		return f
	}
	f := agentFact(AgentAPI, "%v", err)
	f.Artifact = name
	return f
}

// agentArtifacts lists artifact name, newest first, keeping unexpired
// ones of this repository's workflow runs.
func (j *job) agentArtifacts(ctx context.Context, name string) ([]*listedArtifact, error) {
	q := url.Values{"name": {name}, "per_page": {"100"}}
	var list struct {
		Artifacts []*listedArtifact `json:"artifacts"`
	}
	if _, err := ghapi.Get(ctx, j.gh, fmt.Sprintf("repos/%s/%s/actions/artifacts?%s", url.PathEscape(j.owner), url.PathEscape(j.name), q.Encode()), &list); err != nil {
		return nil, &bundle.AgentSessionError{Reason: AgentAPI, Detail: fmt.Sprintf("list artifacts %s: %v", name, err)}
	}
	var out []*listedArtifact
	fork := 0
	for _, a := range list.Artifacts {
		switch {
		case a == nil || a.Name != name || a.Expired:
		case a.WorkflowRun.HeadRepositoryID != a.WorkflowRun.RepositoryID || a.WorkflowRun.RepositoryID == 0:
			fork++
		default:
			out = append(out, a)
		}
	}
	sort.SliceStable(out, func(i, k int) bool { return out[i].CreatedAt.After(out[k].CreatedAt) })
	switch {
	case len(out) > 0:
		return out, nil
	case fork > 0:
		return nil, &bundle.AgentSessionError{Reason: AgentFork, Detail: fmt.Sprintf("%d artifact(s) %s come from workflow runs of a fork: not trusted", fork, name)}
	}
	return nil, &bundle.AgentSessionError{Reason: AgentNoArtifact, Detail: fmt.Sprintf("no unexpired artifact %s: no evidence that the head was produced under a recorded agent session", name)}
}

// openAgentZip unzips the artifact (one archive) and opens it.
func openAgentZip(zipData []byte, want bundle.AgentSessionWant, open bundle.AgentSessionOpener) (*bundle.AgentSessionProof, error) {
	files, err := artifact.Unzip(zipData, maxAgentArtifact, maxAgentArtifact)
	if err != nil {
		return nil, &bundle.AgentSessionError{Reason: bundle.AgentMalformed, Detail: err.Error()}
	}
	if len(files) != 1 {
		return nil, &bundle.AgentSessionError{Reason: bundle.AgentMalformed, Detail: fmt.Sprintf("the artifact holds %d files, want one *%s", len(files), bundle.AgentSessionSuffix)}
	}
	for n, b := range files {
		if !strings.HasSuffix(n, bundle.AgentSessionSuffix) {
			return nil, &bundle.AgentSessionError{Reason: bundle.AgentMalformed, Detail: fmt.Sprintf("the artifact holds %q, want a *%s", n, bundle.AgentSessionSuffix)}
		}
		return bundle.OpenAgentSession(b, want, open)
	}
	return nil, &bundle.AgentSessionError{Reason: bundle.AgentMalformed, Detail: "the artifact is empty"}
}

// agentOpener returns the opener that pins the evidence's signer.
func (j *job) agentOpener(ctx context.Context, pin *contract.AgentSessions) (bundle.AgentSessionOpener, error) {
	if !j.keyless {
		ks, ok := j.signer.(*key.Signer)
		if !ok || ks == nil {
			return nil, &bundle.AgentSessionError{Reason: AgentNoVerifier, Detail: "key mode: agent-session evidence is verified with the job's signing key, and there is none"}
		}
		vs := handoff.KeyVerifiers{ID: ks.KeyID(), Pub: ks.Public}
		return func(att, material []byte) ([]byte, func(time.Time, string, string) error, error) {
			if material != nil {
				return nil, nil, &bundle.AgentSessionError{Reason: bundle.AgentMalformed, Detail: "key-signed evidence carries " + envelope.MaterialFile}
			}
			p, _, err := envelope.Open(att, bundle.PayloadType, bundle.AttestationFile, vs)
			return p, nil, err
		}, nil
	}
	v, err := j.agentVerifiers(ctx, pin)
	if err != nil {
		return nil, err
	}
	return func(att, material []byte) ([]byte, func(time.Time, string, string) error, error) {
		if material == nil {
			return nil, nil, &bundle.AgentSessionError{Reason: bundle.AgentSignature, Detail: "keyless mode: the evidence carries no " + envelope.MaterialFile}
		}
		p, k, err := envelope.OpenWithMaterial(att, bundle.PayloadType, bundle.AttestationFile, material, v)
		if err != nil {
			return nil, nil, agentKeylessRefusal(err)
		}
		return p, func(at time.Time, keyID, repo string) error {
			if keyID != k.KeyID() {
				return &bundle.AgentSessionError{Reason: bundle.AgentMalformed, Detail: "predicate key_id " + clipID(keyID) + " is not the signature's keyid"}
			}
			if err := k.CheckAt(at, "repo:"+repo); err != nil {
				return agentKeylessRefusal(err)
			}
			return nil
		}, nil
	}, nil
}

// agentVerifiers pins keyless evidence to the contract's agent workflow
// at the base branch's ref, against the base commit's trusted root.
func (j *job) agentVerifiers(ctx context.Context, pin *contract.AgentSessions) (*sigstore.Verifiers, error) {
	if pin == nil || pin.Workflow == "" {
		return nil, &bundle.AgentSessionError{Reason: AgentNoPin, Detail: "keyless: the contract pins no agent workflow (approval.agent_sessions.workflow), so no signature can prove agent work"}
	}
	if err := contract.ValidWorkflowPath(pin.Workflow); err != nil {
		return nil, &bundle.AgentSessionError{Reason: AgentNoPin, Detail: "approval.agent_sessions.workflow: " + err.Error()}
	}
	path, base := j.in.trustedRoot, j.ev.BaseRef
	if path == "" {
		return nil, &bundle.AgentSessionError{Reason: AgentNoVerifier, Detail: "keyless: agent-session evidence is verified against the trusted root at input trusted-root, which is empty"}
	}
	if base == "" || j.ev.BaseSHA == "" {
		return nil, &bundle.AgentSessionError{Reason: AgentNoVerifier, Detail: "keyless: no base branch to pin the agent workflow's ref to"}
	}
	root, err := event.ContractAt(ctx, j.ws, j.gh, j.owner, j.name, j.ev.BaseSHA, path)
	if err != nil {
		return nil, &bundle.AgentSessionError{Reason: AgentNoVerifier, Detail: fmt.Sprintf("trusted root %s at base %s: %v", path, short(j.ev.BaseSHA), err)}
	}
	issuer := sigstore.DefaultIssuer
	if c, err := j.ownClaims(ctx); err == nil {
		issuer = c.Issuer
	}
	ref := "refs/heads/" + base
	id := sigstore.Identity{Name: "the contract's agent workflow", Issuer: issuer, SignerWorkflow: j.repo + "/" + pin.Workflow + "@" + ref,
		SourceRepo: j.repo, SourceRef: ref}
	v, err := sigstore.NewVerifiers(root, []sigstore.Identity{id})
	if err != nil {
		return nil, &bundle.AgentSessionError{Reason: AgentNoVerifier, Detail: fmt.Sprintf("%s: %v", path, err)}
	}
	return v, nil
}

func agentKeylessRefusal(err error) error {
	var ve *sigstore.VerifyError
	if errors.As(err, &ve) {
		switch ve.Reason {
		case sigstore.IdentityMismatch:
			return &bundle.AgentSessionError{Reason: AgentSignerID, Detail: err.Error()}
		case sigstore.CertificateInvalid, sigstore.TimestampInvalid, sigstore.TlogInvalid:
			return &bundle.AgentSessionError{Reason: AgentUntrusted, Detail: err.Error()}
		}
	}
	return &bundle.AgentSessionError{Reason: bundle.AgentSignature, Detail: err.Error()}
}

// clipID quotes s, clipped to 80 bytes when longer (an id from untrusted
// evidence).
func clipID(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return fmt.Sprintf("%q", s)
}
