package contract

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Retention is the repository's retention base (the contract's retention:
// section): what `proofgate prune` may archive and reclaim at most. Flags
// and the environment can only make it more conservative (longer ages),
// never less. Absent when the contract has no retention: section, so the
// hash of a contract without one is unchanged.
type Retention struct {
	// ArchiveAfter is how long a terminal run stays in place after its
	// last event before it may be archived (at least MinArchiveAfter).
	ArchiveAfter Duration `json:"archive_after,omitempty"`
	// BlobMinAge is the age below which an unreachable blob is kept (a
	// writer may be about to name it; at least MinBlobMinAge).
	BlobMinAge Duration `json:"blob_min_age,omitempty"`
}

// Floors of the retention settings: no contract, flag or environment
// variable may go below them.
const (
	MinArchiveAfter = Duration(24 * time.Hour)
	MinBlobMinAge   = Duration(time.Minute)
)

// rawRetention mirrors the retention: section.
type rawRetention struct {
	ArchiveAfter *string `json:"archive_after"`
	BlobMinAge   *string `json:"blob_min_age"`
}

// ParseAge parses a retention age: a whole number of days ("30d") or a Go
// duration without sign ("36h", "90m").
func ParseAge(s string) (Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok && n != "" && len(n) <= 5 && !strings.ContainsAny(n, "+-") {
		days, err := strconv.Atoi(n)
		if err != nil {
			return 0, fmt.Errorf("%q is not an age (want e.g. 30d or 36h)", s)
		}
		return Duration(time.Duration(days) * 24 * time.Hour), nil
	}
	d, err := ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an age (want e.g. 30d or 36h)", s)
	}
	return d, nil
}

// resolveRetention checks the retention: section; nil when absent or empty.
func (p *parser) resolveRetention(raw *rawRetention) (*Retention, error) {
	if raw == nil || (raw.ArchiveAfter == nil && raw.BlobMinAge == nil) {
		return nil, nil
	}
	at := fieldPath("retention")
	r := &Retention{}
	for _, f := range []struct {
		name  string
		s     *string
		dst   *Duration
		floor Duration
	}{
		{"archive_after", raw.ArchiveAfter, &r.ArchiveAfter, MinArchiveAfter},
		{"blob_min_age", raw.BlobMinAge, &r.BlobMinAge, MinBlobMinAge},
	} {
		if f.s == nil {
			continue
		}
		d, err := ParseAge(*f.s)
		if err != nil {
			return nil, p.errf(at.key(f.name), "%s", err.Error())
		}
		if d < f.floor {
			return nil, p.errf(at.key(f.name), "%s is below the floor %s", *f.s, f.floor)
		}
		*f.dst = d
	}
	return r, nil
}
