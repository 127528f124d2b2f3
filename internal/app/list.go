package app

import (
	"errors"
	"fmt"

	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

// ListedRun is one row of 'proofgate list': a run reconciled from its
// log, or refused with the reason (Error). Its JSON is list --json's.
type ListedRun struct {
	RunID    string       `json:"run_id"`
	State    replay.State `json:"state,omitempty"`
	Archived bool         `json:"archived,omitempty"`
	Error    string       `json:"error,omitempty"`
}

// List reconciles every run of the state directory, oldest first (without
// the freshness check of status), then adds a refused row for each archive
// the prune log recorded that is gone or altered. Refused reports whether
// any row is refused. A run directory a crashed writer left half-made is
// recovered first where it can be; what cannot is a refused row.
func List(state string) (rows []ListedRun, refused bool, err error) {
	_ = run.Recover(state) // what it cannot restore, the rows report
	store := run.NewStore(state)
	ids, err := store.List()
	if err != nil {
		return nil, false, exit.Wrap(exit.Environment, err)
	}
	rows = []ListedRun{}
	for _, id := range ids {
		rep, err := run.Audit(store.Path(id))
		if err != nil && (!IsLag(err) || rep == nil) {
			rows = append(rows, ListedRun{RunID: id, Error: err.Error()})
			refused = true
			continue
		}
		rows = append(rows, ListedRun{RunID: id, State: rep.State, Archived: retention.IsArchived(store.Path(id))})
	}
	for _, p := range ArchiveProblems(state) {
		rows = append(rows, ListedRun{RunID: p.Run, Error: fmt.Sprintf("%s: %s", p.Reason, p.Detail)})
		refused = true
	}
	return rows, refused, nil
}

// ArchiveProblems are the archives the prune log recorded that are gone
// or altered, and a prune log that cannot be read (run "-").
func ArchiveProblems(state string) []retention.Problem {
	ps, err := retention.Problems(state)
	if err != nil {
		var re *retention.Error
		if errors.As(err, &re) {
			return []retention.Problem{{Run: "-", Reason: re.Reason, Detail: re.Detail}}
		}
		return []retention.Problem{{Run: "-", Reason: retention.ReasonPruneLog, Detail: err.Error()}}
	}
	return ps
}

// IsLag reports whether err is only a projection that lags its log (a
// writer died between appending and rewriting run.json): the log is whole,
// and readers report from it.
func IsLag(err error) bool {
	var ae *replay.AuditError
	return errors.As(err, &ae) && ae.Reason == replay.ReasonProjectionLag
}
