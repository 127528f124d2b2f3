package handoff

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
)

// Importer is the job that imports a hand-off: the repository it lists
// and downloads artifacts in, what it verifies the signature with, what
// the run must be bound to and where it is installed.
type Importer struct {
	GH          *github.Client
	Owner, Name string              // the job's repository
	Signer      envelope.Signer     // key mode: the job's own key
	Keyless     *sigstore.Verifiers // keyless: the trusted root and the job's own identity
	Binding     Binding
	StateDir    string
}

// Import finds the hand-off artifact name for pr's head, opens and
// verifies it, binds it to pr and the job, and installs its run, open.
func (im Importer) Import(ctx context.Context, name string, pr PR) (*run.Run, error) {
	if im.Keyless == nil && im.Signer == nil {
		return nil, Refuse(NoKey, "the hand-off is verified with the job's signing key, and there is none")
	}
	a, err := find(ctx, im.GH, im.Owner, im.Name, name, pr.HeadSHA)
	if err != nil {
		return nil, err
	}
	zipData, err := artifact.Download(ctx, im.GH, im.Owner, im.Name, a.ID, MaxArtifactBytes)
	if err != nil {
		return nil, Refuse(GitHubAPI, "download %s: %v", name, err)
	}
	files, st, err := Open(zipData, im.Signer, im.Keyless)
	if err != nil {
		return nil, err
	}
	if err := im.Binding.checkPR(ctx, st, pr); err != nil {
		return nil, err
	}
	return Install(im.StateDir, st.Predicate.Run.RunID, files)
}

// find returns the newest of the trusted artifacts name for head
// (artifact.Own), the highest id of equally new ones.
func find(ctx context.Context, gh *github.Client, owner, repo, name, head string) (*artifact.Artifact, error) {
	own, fork, err := artifact.Own(ctx, gh, owner, repo, name, head)
	switch {
	case err != nil:
		return nil, Refuse(GitHubAPI, "%v", err)
	case len(own) > 0:
		best := own[0]
		for _, a := range own[1:] {
			if a.CreatedAt.Equal(best.CreatedAt) && a.ID > best.ID {
				best = a
			}
		}
		return best, nil
	case fork > 0:
		return nil, Refuse(Fork, "%d artifact(s) %s come from workflow runs of another head repository (a fork): not trusted", fork, name)
	}
	return nil, Refuse(NotFound, "no unexpired artifact %s for head %s", name, event.ShortSHA(head))
}

// Binding is what an imported run must be for: the importing job's
// repository (owner/name), the contract it resolved and the commit
// checked out in its work tree.
type Binding struct {
	Repo     string
	Contract *contract.Resolved
	WorkTree string
}

// checkPR requires the hand-off to be for pr (number, head and base) and
// its run to be bound to b.
func (b Binding) checkPR(ctx context.Context, st *Statement, pr PR) error {
	if p := st.Predicate.PullRequest; p != pr {
		return Refuse(OtherHead, "the run is for PR #%d head %s base %s, the review for #%d head %s base %s",
			p.Number, event.ShortSHA(p.HeadSHA), event.ShortSHA(p.BaseSHA), pr.Number, event.ShortSHA(pr.HeadSHA), event.ShortSHA(pr.BaseSHA))
	}
	return b.Check(ctx, st.Predicate.Run, "the run used contract %s, the base contract is %s",
		"the run tested commit %s, the checkout is %s (the test merge moved with the base?)")
}

// Check requires an imported run to be for b's repository, contract and
// profile, and the commit checked out; contractMsg and commitMsg word the
// refusals (claimed, then ours).
func (b Binding) Check(ctx context.Context, r bundle.RunSummary, contractMsg, commitMsg string) error {
	if r.Repo != b.Repo {
		return Refuse(OtherRepo, "the run is for repository %q, not %s", r.Repo, b.Repo)
	}
	h, err := b.Contract.Hash()
	if err != nil {
		return Refuse(OtherContract, "%v", err)
	}
	if r.ContractHash != h || r.Profile != b.Contract.Profile {
		return Refuse(OtherContract, contractMsg, event.ShortSHA(r.ContractHash), event.ShortSHA(h))
	}
	commit, err := event.Head(ctx, b.WorkTree)
	if err != nil || commit != r.Source.Commit {
		return Refuse(Checkout, commitMsg, event.ShortSHA(r.Source.Commit), event.ShortSHA(commit))
	}
	return nil
}

// Install writes a verified hand-off's files as run id's directory in
// stateDir and opens the run. An existing directory of that run must hold
// the same log.
func Install(stateDir, id string, files map[string][]byte) (*run.Run, error) {
	if !run.ValidID(id) {
		return nil, Refuse(Malformed, "run id %q", id)
	}
	dir := run.NewStore(stateDir).Path(id)
	if have, err := ReadRunFile(dir, bundle.EventsFile); err == nil {
		if !bytes.Equal(have, files[bundle.EventsFile]) {
			return nil, Refuse(Exists, "run %s is in the state directory with another log", id)
		}
	} else if err := writeFiles(dir, files); err != nil {
		return nil, err
	}
	r, err := run.Open(stateDir, id)
	if err != nil {
		return nil, Refuse(Audit, "open the imported run: %v", err)
	}
	return r, nil
}

// writeFiles creates each file under dir; none may exist.
func writeFiles(dir string, files map[string][]byte) error {
	for n, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := durable.CreateExclusive(p, b, 0o644); err != nil {
			return fmt.Errorf("import %s: %w", n, err)
		}
	}
	return nil
}
