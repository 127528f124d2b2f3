package trust

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/proofgate/proofgate/internal/printable"
)

// Keyless signing identities (ADR 0010). A trust store may hold, beside
// its keys, an optional "identities" array: the identity policies a
// keyless bundle's certificate may match, with the keys' lifecycle judged
// at the witnessed time instead of the asserted signing time:
//
//	"identities": [
//	  {
//	    "id": "release",
//	    "issuer": "https://token.actions.githubusercontent.com",
//	    "signer_workflow": "acme/widget/.github/workflows/release.yml@refs/heads/main",
//	    "source_repo": "acme/widget",
//	    "source_ref": "refs/heads/main",
//	    "status": "active" | "retired" | "revoked",
//	    "not_before": "<RFC 3339>", "not_after": "<RFC 3339>",
//	    "retired_at": "<RFC 3339>", "revoked_at": "<RFC 3339>"
//	  }
//	]
//
// id is a free printable label, unique in the store. signer_workflow
// (OWNER/REPO/.github/workflows/FILE, optionally @REF) or source_repo
// (OWNER/REPO) must be set: an identity that pins neither would accept a
// certificate of any repository. issuer, when set, is an http(s) URL;
// source_ref starts with "refs/". Empty fields are omitted. The package
// does not match certificates: the caller (cmd/proofgate) turns each
// Identity into a bundle/sigstore identity policy whose validity is
// CheckWitnessed.

// MaxIdentities bounds the identities of a store.
const MaxIdentities = 1000

// Identity is one trusted keyless signing identity.
type Identity struct {
	ID             string     `json:"id"`
	Issuer         string     `json:"issuer,omitempty"`
	SignerWorkflow string     `json:"signer_workflow,omitempty"`
	SourceRepo     string     `json:"source_repo,omitempty"`
	SourceRef      string     `json:"source_ref,omitempty"`
	Status         Status     `json:"status"`
	NotBefore      *time.Time `json:"not_before,omitempty"`
	NotAfter       *time.Time `json:"not_after,omitempty"`
	RetiredAt      *time.Time `json:"retired_at,omitempty"`
	RevokedAt      *time.Time `json:"revoked_at,omitempty"`
}

var (
	workflowRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/\.github/workflows/[^@\s]+(@\S+)?$`)
	repoRE     = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
)

func (i *Identity) lifecycle() lifecycle {
	return lifecycle{i.Status, i.NotBefore, i.NotAfter, i.RetiredAt, i.RevokedAt}
}

// validate checks the identity's id, policy and lifecycle; field labels
// errors.
func (i *Identity) validate(field string) error {
	if err := printable.Check(field+".id", i.ID); err != nil {
		return err
	}
	if err := i.CheckPolicy(field); err != nil {
		return err
	}
	return validateLifecycle(field, "identity", i.lifecycle())
}

// CheckPolicy checks the identity's policy fields (issuer, signer_workflow,
// source_repo, source_ref), as a store's are checked: printable, of their
// shapes, and pinning a workflow or a repository. field labels errors.
func (i *Identity) CheckPolicy(field string) error {
	for _, f := range []struct{ name, v string }{{"issuer", i.Issuer}, {"signer_workflow", i.SignerWorkflow},
		{"source_repo", i.SourceRepo}, {"source_ref", i.SourceRef}} {
		if f.v != "" {
			if err := printable.Check(field+"."+f.name, f.v); err != nil {
				return err
			}
		}
	}
	if i.SignerWorkflow == "" && i.SourceRepo == "" {
		return fmt.Errorf("%s: neither signer_workflow nor source_repo: an identity must pin a workflow or a repository", field)
	}
	if i.SignerWorkflow != "" && !workflowRE.MatchString(i.SignerWorkflow) {
		return fmt.Errorf("%s.signer_workflow: %q: want OWNER/REPO/.github/workflows/FILE[@REF]", field, printable.Escape(i.SignerWorkflow))
	}
	if i.SourceRepo != "" && !repoRE.MatchString(i.SourceRepo) {
		return fmt.Errorf("%s.source_repo: %q: want OWNER/REPO", field, printable.Escape(i.SourceRepo))
	}
	if i.SourceRef != "" && !strings.HasPrefix(i.SourceRef, "refs/") {
		return fmt.Errorf("%s.source_ref: %q: want a full ref, e.g. refs/heads/main", field, printable.Escape(i.SourceRef))
	}
	if i.Issuer != "" {
		u, err := url.Parse(i.Issuer)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("%s.issuer: %q: want an http(s) URL", field, printable.Escape(i.Issuer))
		}
	}
	return nil
}

// validateIdentities checks every identity and their count and ids.
func (s *Store) validateIdentities(name string) error {
	if len(s.Identities) > MaxIdentities {
		return fmt.Errorf("%s: identities: more than %d", name, MaxIdentities)
	}
	seen := map[string]bool{}
	for n := range s.Identities {
		i := &s.Identities[n]
		field := fmt.Sprintf("%s: identities[%d]", name, n)
		if err := i.validate(field); err != nil {
			return err
		}
		if seen[i.ID] {
			return fmt.Errorf("%s.id: duplicate identity id %q", field, printable.Escape(i.ID))
		}
		seen[i.ID] = true
	}
	return nil
}

// CheckWitnessed refuses the identity for a keyless signature a witness
// (a timestamp authority, a transparency log) saw at at: the keys' rules
// at that time (status, window, retirement, revocation), as a *KeyError
// whose Identity is the id (key-revoked, key-not-valid-at-signing-time).
func (i *Identity) CheckWitnessed(at time.Time) error {
	if r, detail := i.lifecycle().at(at, "witnessed at", "identity"); r != "" {
		return &KeyError{Reason: r, Identity: i.ID, Detail: detail}
	}
	return nil
}

// FindIdentity returns the identity with id, or nil.
func (s *Store) FindIdentity(id string) *Identity {
	for n := range s.Identities {
		if s.Identities[n].ID == id {
			return &s.Identities[n]
		}
	}
	return nil
}

// AddIdentity adds i as an active identity. Its id must be new.
func (s *Store) AddIdentity(i Identity) error {
	if s.FindIdentity(i.ID) != nil {
		return fmt.Errorf("trust store: identity %q is already present", printable.Escape(i.ID))
	}
	if len(s.Identities) >= MaxIdentities {
		return fmt.Errorf("trust store: already holds %d identities", MaxIdentities)
	}
	i.Status, i.RetiredAt, i.RevokedAt = Active, nil, nil
	i.NotBefore, i.NotAfter = utc(i.NotBefore), utc(i.NotAfter)
	if err := i.validate(fmt.Sprintf("trust store: identities[%d]", len(s.Identities))); err != nil {
		return err
	}
	s.Identities = append(s.Identities, i)
	return nil
}

// RetireIdentity marks identity id retired as of at, as Retire does a key.
func (s *Store) RetireIdentity(id string, at time.Time) error {
	i := s.FindIdentity(id)
	if i == nil {
		return unknownIdentity(id)
	}
	if i.Status == Revoked {
		return fmt.Errorf("trust store: identity %q is revoked; it cannot be retired", printable.Escape(id))
	}
	i.Status, i.RetiredAt = Retired, utc(&at)
	return nil
}

// RevokeIdentity marks identity id revoked, as Revoke does a key.
func (s *Store) RevokeIdentity(id string, at *time.Time) error {
	i := s.FindIdentity(id)
	if i == nil {
		return unknownIdentity(id)
	}
	if i.Status == Revoked && i.RevokedAt == nil {
		return nil
	}
	if i.Status == Revoked && at != nil && i.RevokedAt.Before(*at) {
		return fmt.Errorf("trust store: identity %q is already revoked at %s", printable.Escape(id), i.RevokedAt.Format(time.RFC3339))
	}
	i.Status, i.RevokedAt = Revoked, utc(at)
	return nil
}

func unknownIdentity(id string) error {
	return &KeyError{Reason: UnknownKey, Identity: printable.Escape(id), Detail: "not in the trust store"}
}
