// Package approval decides who counts as one person among a run's human
// decisions and whether the people who approved are enough.
//
// A decision is a [Decision] (approved or rejected) spoken by an
// [Identity]: the actor it was recorded under and, when it came from a
// code host, the [Account] there — a provider, the provider's immutable
// subject and a renamable login, the shape of sigstore-go's
// CertificateIdentity (an issuer and a subject). Identities are derived
// from the recorded decisions (internal/run's approval.recorded data and its
// GitHub review); they are not themselves a wire format.
//
// A [Tally] groups the decisions of a run into people: every identity a
// decision shows — the actor and the account login, each trimmed and case
// folded, and the account subject — names one person, and a decision
// showing the identities of two people merges them. A person's latest
// decision is theirs: a later rejection withdraws an approval. Bots,
// permissions, review states and commits are the provider's business
// (internal/ci/review) and do not exist at this level.
//
// A [Requirement] measures the tally: [Requirement.Of] returns a
// [Verdict]. Approval rules (teams, code owners, paths) plug in as [Rule]s
// of the requirement.
package approval

import (
	"strconv"

	"github.com/proofgate/proofgate/kernel/actor"
)

// Decision is one person's verdict on a run. Its values are the strings
// recorded on the wire ("decision" in approval.recorded and run.json).
type Decision string

// Decisions.
const (
	Approved Decision = "approved"
	Rejected Decision = "rejected"
)

// Valid reports whether d is Approved or Rejected.
func (d Decision) Valid() bool { return d == Approved || d == Rejected }

// ProviderGitHub is the Account.Provider of a GitHub account.
const ProviderGitHub = "github"

// Identity is who a decision speaks for.
type Identity struct {
	// Actor is the name the decision was recorded under (a local user, or
	// the account login for a review). Actors and logins share one name
	// space: the actor "alice" and the login "Alice" are one person.
	Actor string
	// Account is the code-host account the decision came from; nil for a
	// decision made locally.
	Account *Account
}

// Account is an account at a code host.
type Account struct {
	Provider string // e.g. ProviderGitHub
	Subject  string // the provider's immutable id (GitHub: the decimal user id); "" when unknown
	Login    string // the current login: case-insensitive, can be renamed
}

// Local is the identity of a decision recorded by actor with no account.
func Local(actor string) Identity { return Identity{Actor: actor} }

// GitHub is the identity of a decision recorded by actor from a review by
// the GitHub account login with numeric user id.
func GitHub(actor, login string, userID int64) Identity {
	return Identity{Actor: actor, Account: &Account{Provider: ProviderGitHub, Subject: strconv.FormatInt(userID, 10), Login: login}}
}

// keys are the names under which id is one person: the actor and the
// login, trimmed and case folded, and the provider's subject. An empty
// actor, login or subject is still a key (it merges, never splits: a
// tally never counts more people than a finer one would).
func (id Identity) keys() []string {
	keys := []string{nameKey(id.Actor)}
	if a := id.Account; a != nil {
		keys = append(keys, a.Provider+"-id:"+a.Subject, nameKey(a.Login))
	}
	return keys
}

func nameKey(name string) string { return "actor:" + actor.Key(name) }

// Same reports whether a and b are one account: by subject when both have
// one, else by login without case. It is exact where a Tally is coarse: a
// tally merges on any shared name so that counting fails closed, while
// Same lets a provider match, say, a reviewer against a pull request's
// author without mistaking the new holder of a renamed login for them.
func (a Account) Same(b Account) bool {
	if a.Provider != b.Provider {
		return false
	}
	if a.Subject != "" && b.Subject != "" {
		return a.Subject == b.Subject
	}
	return a.Login != "" && actor.Same(a.Login, b.Login)
}
