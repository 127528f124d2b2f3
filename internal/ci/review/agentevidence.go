package review

// Verifying the from_agent_session evidence (ADR 0021, docs/SPEC.md
// "Agent-session evidence"). The agent workflow uploads, as artifact
// AgentSessionArtifactPrefix+<commit>, the signed archive
// bundle.ExportAgentSession made of the run that verified the commit its
// agent produced and the implementation run holding the sessions.
// FindAgentEvidence lists that artifact name (a hint), keeps the unexpired
// artifacts of workflow runs of its repository (not a fork's head
// repository), newest first, and accepts the newest that
// bundle.OpenAgentSession verifies for the pull request's head and the
// repository, opened by KeyAgentOpener (the job's own signing key) or
// KeylessAgentOpener (pinned to AgentIdentity: the contract's agent
// workflow at the base branch's ref). Everything else leaves the fact
// false with a typed reason, recorded in the decision.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/printable"
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

// Bounds on the evidence read.
const (
	MaxAgentTries    = 3         // newest artifacts tried
	MaxAgentArtifact = 256 << 20 // bytes of one downloaded zip
)

// AgentRefuse is an *bundle.AgentSessionError with reason r.
func AgentRefuse(r bundle.AgentSessionReason, format string, args ...any) error {
	return &bundle.AgentSessionError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

func agentFact(r bundle.AgentSessionReason, format string, args ...any) AgentSession {
	return AgentSession{Reason: string(r), Detail: fmt.Sprintf(format, args...)}
}

// AgentRefusal is the unproven fact err gives for artifact name: its
// reason when err is a *bundle.AgentSessionError, else AgentAPI.
func AgentRefusal(err error, name string) AgentSession {
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

// agentDownload downloads the zip of the artifact with id.
type agentDownload func(ctx context.Context, id int64) ([]byte, error)

// agentEvidence tries the artifacts ids of name, newest first and at most
// MaxAgentTries, and returns the fact the first one open verifies for
// want proves, or the last one's refusal.
func agentEvidence(ctx context.Context, name string, ids []int64, download agentDownload, want bundle.AgentSessionWant, open bundle.AgentSessionOpener) AgentSession {
	var last AgentSession
	for i, id := range ids {
		if i == MaxAgentTries {
			break
		}
		zipData, err := download(ctx, id)
		if err != nil {
			last = agentFact(AgentAPI, "download %s: %v", name, err)
			continue
		}
		p, err := OpenAgentZip(zipData, want, open)
		if err != nil {
			last = AgentRefusal(err, name)
			continue
		}
		return AgentSession{Proven: true, Artifact: name, Run: p.Run, Implementation: p.Implementation, Sessions: p.Sessions}
	}
	last.Artifact = name
	return last
}

// OpenAgentZip unzips the artifact (one archive) and opens it.
func OpenAgentZip(zipData []byte, want bundle.AgentSessionWant, open bundle.AgentSessionOpener) (*bundle.AgentSessionProof, error) {
	files, err := artifact.Unzip(zipData, MaxAgentArtifact, MaxAgentArtifact)
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

// KeyAgentOpener opens key-signed evidence with vs (the job's own signing
// key): evidence carrying Sigstore material is malformed.
func KeyAgentOpener(vs envelope.Verifiers) bundle.AgentSessionOpener {
	return func(att, material []byte) ([]byte, func(time.Time, string, string) error, error) {
		if material != nil {
			return nil, nil, &bundle.AgentSessionError{Reason: bundle.AgentMalformed, Detail: "key-signed evidence carries " + envelope.MaterialFile}
		}
		p, _, err := envelope.Open(att, bundle.PayloadType, bundle.AttestationFile, vs)
		return p, nil, err
	}
}

// KeylessAgentOpener opens keyless evidence against v (see
// AgentVerifiers): the signature's certificate must be v's identity, and
// the predicate's key id the signature's.
func KeylessAgentOpener(v envelope.MaterialVerifiers) bundle.AgentSessionOpener {
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
				return &bundle.AgentSessionError{Reason: bundle.AgentMalformed, Detail: "predicate key_id " + printable.ClipQuoted(keyID) + " is not the signature's keyid"}
			}
			if err := k.CheckAt(at, "repo:"+repo); err != nil {
				return agentKeylessRefusal(err)
			}
			return nil
		}, nil
	}
}

// CheckAgentPin refuses a contract that pins no valid agent workflow
// (approval.agent_sessions.workflow; pin nil: unset): keyless evidence
// then proves nothing.
func CheckAgentPin(pin *contract.AgentSessions) error {
	if pin == nil || pin.Workflow == "" {
		return &bundle.AgentSessionError{Reason: AgentNoPin, Detail: "keyless: the contract pins no agent workflow (approval.agent_sessions.workflow), so no signature can prove agent work"}
	}
	if err := contract.ValidWorkflowPath(pin.Workflow); err != nil {
		return &bundle.AgentSessionError{Reason: AgentNoPin, Detail: "approval.agent_sessions.workflow: " + err.Error()}
	}
	return nil
}

// AgentVerifiers pins keyless evidence of repo (OWNER/REPO) to workflow,
// the contract's agent workflow, at the base branch base, certified by
// issuer, against the trusted root (its file's content; path names it in
// refusals).
func AgentVerifiers(root []byte, path, issuer, repo, workflow, base string) (*sigstore.Verifiers, error) {
	ref := "refs/heads/" + base
	id := sigstore.Identity{Name: "the contract's agent workflow", Issuer: issuer, SignerWorkflow: repo + "/" + workflow + "@" + ref,
		SourceRepo: repo, SourceRef: ref}
	v, err := sigstore.NewVerifiers(root, []sigstore.Identity{id})
	if err != nil {
		return nil, &bundle.AgentSessionError{Reason: AgentNoVerifier, Detail: fmt.Sprintf("%s: %v", path, err)}
	}
	return v, nil
}

// agentKeylessRefusal types a keyless verification failure.
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
