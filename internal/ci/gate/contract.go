package gate

import (
	"context"
	"errors"
	"fmt"

	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/exit"
)

// ReleaseContract resolves the hash of the contract the run had to use:
// the file path (input contract) at the release commit, with profile. It
// returns the refusal when it cannot.
func ReleaseContract(ctx context.Context, r Repo, commit, path, profile string) (string, *Refusal) {
	data, err := event.ContractAt(ctx, r.Workspace, r.GitHub, r.Owner, r.Name, commit, path)
	switch {
	case errors.Is(err, event.ErrNotInBase):
		return "", &Refusal{exit.Refused, string(ReasonNoContract), fmt.Sprintf("the release commit %s has no %s: no run can be bound to a contract (input contract names another path)", event.ShortSHA(commit), path)}
	case err != nil:
		return "", &Refusal{exit.Environment, string(ReasonGitHubAPI), fmt.Errorf("read %s at the release commit %s: %w", path, event.ShortSHA(commit), err).Error()}
	}
	c, err := contract.Parse(path, data, profile)
	if err != nil {
		return "", &Refusal{exit.Refused, string(ReasonNoContract), fmt.Sprintf("the contract at the release commit %s does not resolve: %v", event.ShortSHA(commit), err)}
	}
	h, err := c.Hash()
	if err != nil {
		return "", &Refusal{exit.Refused, string(ReasonNoContract), err.Error()}
	}
	return h, nil
}
