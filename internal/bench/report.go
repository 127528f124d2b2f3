package bench

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// ReportVersion is the version of the report format.
const ReportVersion = 1

// Report is `proofgate benchmark report`: facts of every reconciled run,
// the runs refused, aggregate rates and, with a manifest, each task's
// comparability with its baseline.
type Report struct {
	Version        int          `json:"version"`
	Runs           []RunFacts   `json:"runs"`
	Refused        []Refused    `json:"refused"`
	Aggregate      Aggregate    `json:"aggregate"`
	Manifest       string       `json:"manifest,omitempty"`
	ManifestDigest string       `json:"manifest_digest,omitempty"`
	Tasks          []TaskReport `json:"tasks,omitempty"`
	// Unmatched are reconciled runs bound to a suite and task the
	// manifest does not declare.
	Unmatched []string `json:"unmatched_runs,omitempty"`
}

// RunFacts are what one reconciled run's log shows.
type RunFacts struct {
	RunID        string         `json:"run_id"`
	State        string         `json:"state"`
	ContractHash string         `json:"contract_hash"`
	Suite        string         `json:"suite,omitempty"`
	Task         string         `json:"task,omitempty"`
	Checks       int            `json:"checks"`
	Outcomes     map[string]int `json:"outcomes"`
	Evidence     int            `json:"evidence"` // evidence blobs referenced, each re-hashed
	Context      int            `json:"context"`  // context snapshots attached
	Approvals    int            `json:"approvals"`
	Rejections   int            `json:"rejections"`
	Retries      int            `json:"retries"` // check executions beyond one per check
	Supersedes   string         `json:"supersedes,omitempty"`
	Stale        bool           `json:"stale"`
	DurationMS   int64          `json:"duration_ms"`         // run.planned to the last event
	ReviewMS     *int64         `json:"review_ms,omitempty"` // AWAITING_APPROVAL to the first decision
}

// Refused is a run that does not reconcile: it is not counted.
type Refused struct {
	RunID  string `json:"run_id"`
	Reason string `json:"reason"`
	Line   int    `json:"line,omitempty"`
	Detail string `json:"detail"`
}

// Aggregate are rates over the reconciled runs (fractions, 4 decimals).
type Aggregate struct {
	Runs          int            `json:"runs"`
	Refused       int            `json:"refused"`
	States        map[string]int `json:"states"`
	CompleteRate  float64        `json:"complete_rate"`
	BlockedRate   float64        `json:"blocked_rate"`
	StaleRate     float64        `json:"stale_rate"`
	Checks        int            `json:"checks"`
	CheckPassRate float64        `json:"check_pass_rate"`
	Approvals     int            `json:"approvals"`
	RetriedRate   float64        `json:"retried_rate"` // runs with a retried check, or that supersede a run
}

// History reads every run of the state directory, oldest (lowest id)
// first, and reconciles each as `proofgate status --audit` does (the log's chain,
// its replay against the frozen contract, every evidence blob, run.json):
// a run that does not reconcile is listed in Refused and counted nowhere
// else. A projection that only trails its log (a live writer) reconciles.
// Nothing is written: unlike status, History never moves a run to STALE.
func History(stateDir string) (*Report, error) {
	store := run.NewStore(stateDir)
	ids, err := store.List()
	if err != nil {
		return nil, err
	}
	r := &Report{Version: ReportVersion, Runs: []RunFacts{}, Refused: []Refused{}}
	for _, id := range ids {
		f, err := runFacts(store.Path(id))
		if err != nil {
			r.Refused = append(r.Refused, refusal(id, err))
			continue
		}
		r.Runs = append(r.Runs, *f)
	}
	r.Aggregate = aggregate(r.Runs, len(r.Refused))
	return r, nil
}

func refusal(id string, err error) Refused {
	var ae *replay.AuditError
	if errors.As(err, &ae) {
		return Refused{RunID: id, Reason: string(ae.Reason), Line: ae.Line, Detail: ae.Detail}
	}
	return Refused{RunID: id, Reason: "unreadable", Detail: err.Error()}
}

// runFacts reconciles the run in dir and reads its facts from exactly the
// events the reconciliation verified (the prefix ending at its chain head).
func runFacts(dir string) (*RunFacts, error) {
	rep, err := reconcile(dir)
	if err != nil {
		return nil, err
	}
	// A torn tail returns the intact events beside its error.
	events, _ := eventlog.ReadFile(filepath.Join(dir, replay.EventsFile), nil)
	if rep.ChainLength == 0 || len(events) < rep.ChainLength || events[rep.ChainLength-1].Hash != rep.ChainHead {
		return nil, &replay.AuditError{Reason: replay.ReasonChain, Detail: "the log changed while it was read"}
	}
	events = events[:rep.ChainLength]
	c, hash, err := replay.ReadContract(os.DirFS(dir))
	if err != nil {
		return nil, err
	}
	if hash != rep.ContractHash {
		return nil, &replay.AuditError{Reason: replay.ReasonContract, Detail: "contract.json changed while it was read"}
	}
	binding := c.Benchmark
	f := &RunFacts{
		RunID: rep.RunID, State: string(rep.State), ContractHash: rep.ContractHash,
		Checks: len(rep.Checks), Outcomes: map[string]int{}, Evidence: len(rep.Blobs),
		Stale: rep.State == replay.Stale,
	}
	if binding != nil {
		f.Suite, f.Task = binding.Suite, binding.Task
	}
	for _, c := range rep.Checks {
		f.Outcomes[string(c.Outcome)]++
	}
	for _, d := range rep.Decisions {
		if d.Decision == "approved" {
			f.Approvals++
		} else {
			f.Rejections++
		}
	}
	if err := eventFacts(f, events); err != nil {
		return nil, err
	}
	return f, nil
}

// reconcile is the reconciliation of status (run.Inspect),
// without its writes: a projection that trails the log, and a damaged
// tail (a writer killed mid-append) whose intact lines reconcile, are
// accepted; anything else is refused.
func reconcile(dir string) (*replay.Report, error) {
	rep, _, err := replay.AuditReplay(dir)
	if err == nil || replay.IsReason(err, replay.ReasonProjectionLag) {
		return rep, nil
	}
	irep, _, ok, ierr := replay.AuditIntact(dir)
	if !ok {
		return nil, err
	}
	if ierr != nil && !replay.IsReason(ierr, replay.ReasonProjectionLag) {
		return nil, ierr
	}
	return irep, nil
}

// eventFacts fills the facts only the events show: times, retries,
// context snapshots and the run a retry supersedes.
func eventFacts(f *RunFacts, events []eventlog.Event) error {
	start, err := time.Parse(time.RFC3339Nano, events[0].Time)
	if err != nil {
		return &replay.AuditError{Reason: replay.ReasonBadEvent, Line: 1, Detail: "time: " + err.Error()}
	}
	started := map[string]int{}
	var awaiting time.Time
	for i, e := range events {
		at, err := time.Parse(time.RFC3339Nano, e.Time)
		if err != nil {
			return &replay.AuditError{Reason: replay.ReasonBadEvent, Line: i + 1, Detail: "time: " + err.Error()}
		}
		f.DurationMS = at.Sub(start).Milliseconds()
		switch e.Type {
		case replay.TypePlanned:
			var d replay.PlannedData
			if strictjson.DecodeOpen(e.Data, &d) == nil {
				f.Supersedes = d.Supersedes
			}
		case replay.TypeContext:
			f.Context++
		case replay.TypeCheckStarted:
			var d replay.CheckStartedData
			if strictjson.DecodeOpen(e.Data, &d) == nil {
				if started[d.Check]++; started[d.Check] > 1 {
					f.Retries++
				}
			}
		case replay.TypeState:
			var d replay.StateData
			if strictjson.DecodeOpen(e.Data, &d) == nil && d.To == replay.AwaitingApproval && awaiting.IsZero() {
				awaiting = at
			}
		case replay.TypeApproval:
			if !awaiting.IsZero() && f.ReviewMS == nil {
				ms := at.Sub(awaiting).Milliseconds()
				f.ReviewMS = &ms
			}
		}
	}
	return nil
}

func rate(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return math.Round(float64(n)/float64(of)*1e4) / 1e4
}

func aggregate(runs []RunFacts, refused int) Aggregate {
	a := Aggregate{Runs: len(runs), Refused: refused, States: map[string]int{}}
	passed, retried := 0, 0
	for _, r := range runs {
		a.States[r.State]++
		a.Checks += r.Checks
		passed += r.Outcomes["passed"]
		a.Approvals += r.Approvals
		if r.Retries > 0 || r.Supersedes != "" {
			retried++
		}
	}
	a.CompleteRate = rate(a.States[string(replay.Complete)], len(runs))
	a.BlockedRate = rate(a.States[string(replay.Blocked)], len(runs))
	a.StaleRate = rate(a.States[string(replay.Stale)], len(runs))
	a.CheckPassRate = rate(passed, a.Checks)
	a.RetriedRate = rate(retried, len(runs))
	return a
}

// String summarises a refusal for humans.
func (r Refused) String() string {
	if r.Line > 0 {
		return fmt.Sprintf("%s: %s at event line %d: %s", r.RunID, r.Reason, r.Line, r.Detail)
	}
	return fmt.Sprintf("%s: %s: %s", r.RunID, r.Reason, r.Detail)
}
