package retention

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/kernel/replay"
)

// RunsDir is <state>/runs.
const RunsDir = "runs"

var runIDRE = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[0-9a-f]{8}$`)

// Decisions about one run.
const (
	Archive = "archive"
	Keep    = "keep"
)

// RunPlan is what prune does with one run, and why.
type RunPlan struct {
	Run       string `json:"run"`
	State     string `json:"state,omitempty"`
	LastEvent string `json:"last_event,omitempty"`
	Decision  string `json:"decision"` // archive | keep
	Reason    string `json:"reason"`
	// Archived is set for a run archived before.
	Archived bool `json:"archived,omitempty"`
	// Writer is the live writer the run is kept (or skipped) for.
	Writer *Writer `json:"writer,omitempty"`

	head       string
	length     int
	blobs      []string
	needs      []string // runs this one names (retry, implemented_by)
	locked     bool     // a lock file exists (live or not)
	unreadable bool
}

// scanRun reads one run directory and says what it references.
func scanRun(stateDir, id string, h *History) RunPlan {
	dir := filepath.Join(stateDir, RunsDir, id)
	rp := RunPlan{Run: id, Decision: Keep}
	if IsArchived(dir) {
		rp.Archived = true
		rec, ok := h.Archived[id]
		if !ok {
			rp.unreadable, rp.Reason = true, "archived, but the prune log never recorded its archive"
			return rp
		}
		rp.State, rp.Reason, rp.blobs, rp.head, rp.length = rec.State, "archived already ("+rec.Archive+")", rec.Blobs, rec.Head, rec.Length
		return rp
	}
	if o, err := lock.Read(filepath.Join(dir, lockFile)); err == nil || !errors.Is(err, os.ErrNotExist) {
		rp.locked = true
		if err == nil && lock.Alive(o) {
			rp.Reason = fmt.Sprintf("a live writer holds it (pid %d)", o.PID)
			rp.Writer = &Writer{PID: o.PID, Host: o.Host, Purpose: "writer lock", Since: o.Created.UTC().Format(time.RFC3339)}
		} else {
			rp.Reason = "its lock file is left by a dead writer ('proofgate events unlock' it first)"
		}
	} else if w, why := leased(dir); why != "" {
		rp.locked, rp.Writer, rp.Reason = true, w, why
	}
	rep, f, err := replay.AuditReplay(dir)
	if err != nil && !replay.IsReason(err, replay.ReasonProjectionLag) {
		var ok bool
		rep, f, ok, _ = replay.AuditIntact(dir)
		if !ok || rep == nil {
			rp.unreadable, rp.Reason = true, "it does not reconcile: "+err.Error()
			return rp
		}
		rp.unreadable = true // a torn tail: not archived, its blobs kept
		if rp.Reason == "" {
			rp.Reason = "its log has a torn tail (the next writer repairs it)"
		}
	}
	rp.State, rp.LastEvent, rp.head, rp.length, rp.blobs = string(rep.State), rep.LastEventTime, rep.ChainHead, rep.ChainLength, rep.Referenced()
	if s := f.Planned().Supersedes; s != "" {
		rp.needs = append(rp.needs, s)
	}
	if ib := f.ImplementedBy(); ib != nil {
		rp.needs = append(rp.needs, ib.Run)
	}
	return rp
}

// decide sets the decision of every readable, unlocked run by its state
// and age, then keeps every run a kept run needs.
func decide(runs []RunPlan, s Settings, now time.Time) {
	minAge := max(s.ArchiveAfter.Value, 24*time.Hour)
	for i := range runs {
		rp := &runs[i]
		if rp.Archived || rp.unreadable || rp.locked {
			continue
		}
		switch last, err := time.Parse(time.RFC3339Nano, rp.LastEvent); {
		case !terminal(rp.State):
			rp.Reason = rp.State + " is not terminal"
		case err != nil:
			rp.Reason = "its last event has no readable time"
		case now.Sub(last) < minAge:
			rp.Reason = fmt.Sprintf("its last event is %s old, younger than %s", Age(now.Sub(last).Round(time.Second)), Age(minAge))
		default:
			rp.Decision, rp.Reason = Archive, fmt.Sprintf("%s, last event %s old", rp.State, Age(now.Sub(last).Round(time.Hour)))
		}
	}
	idx := map[string]int{}
	for i, rp := range runs {
		idx[rp.Run] = i
	}
	// A kept run keeps what it names, transitively.
	var queue []int
	for i, rp := range runs {
		if rp.Decision == Keep && !rp.Archived {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, n := range runs[i].needs {
			j, ok := idx[n]
			if ok && runs[j].Decision == Archive {
				runs[j].Decision, runs[j].Reason = Keep, "retained run "+runs[i].Run+" names it"
				queue = append(queue, j)
			}
		}
	}
}

// Writer is a live writer of a run: the holder of its writer lock, or of
// a lease on it (lock.TakeLease: evidence collect).
type Writer struct {
	PID     int    `json:"pid"`
	Host    string `json:"host"`
	Purpose string `json:"purpose"`
	Since   string `json:"since"`
}

// leased says which live writer holds a lease on the run in dir, and why
// the run is left alone; why is "" when none does. Leases of dead owners
// hold nothing (a killed writer's run is reclaimed).
func leased(dir string) (*Writer, string) {
	held, err := lock.LiveLeases(filepath.Join(dir, lockFile))
	switch {
	case err != nil:
		return nil, "its leases cannot be read: " + err.Error()
	case len(held) == 0:
		return nil, ""
	}
	h := held[0]
	why := "a live writer holds a lease on it (" + h.Describe() + ")"
	if h.Err != nil {
		return nil, why
	}
	o := h.Info.Owner
	return &Writer{PID: o.PID, Host: o.Host, Purpose: h.Info.Purpose, Since: o.Created.UTC().Format(time.RFC3339)}, why
}

func terminal(state string) bool {
	switch replay.State(state) {
	case replay.Complete, replay.Rejected, replay.Cancelled, replay.Superseded:
		return true
	}
	return false
}

// listRuns returns the run ids of the store, oldest first.
func listRuns(stateDir string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(stateDir, RunsDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() && runIDRE.MatchString(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	sort.Strings(ids)
	return ids, nil
}
