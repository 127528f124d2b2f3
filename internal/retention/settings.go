package retention

import (
	"fmt"
	"strings"
	"time"

	"github.com/proofgate/proofgate/kernel/contract"
)

// Where a setting came from.
const (
	FromFlag     = "flag"
	FromEnv      = "environment"
	FromContract = "contract"
	FromDefault  = "default"
)

// Defaults of the settings when the contract has no retention: section.
const (
	DefaultArchiveAfter = 30 * 24 * time.Hour
	DefaultBlobMinAge   = time.Hour
	// MinSettle is the shortest settle time an apply accepts (Options
	// can shorten it for tests only: UnsafeShortSettle).
	MinSettle = 5 * time.Second
)

// Setting is one effective setting and where it came from.
type Setting struct {
	Name   string        `json:"name"`
	Value  time.Duration `json:"-"`
	Text   string        `json:"value"`
	Source string        `json:"source"` // flag | environment | contract | default
	// Origin names the flag, variable or contract field.
	Origin string `json:"origin"`
}

// Settings are prune's effective settings.
type Settings struct {
	ArchiveAfter Setting `json:"archive_after"`
	BlobMinAge   Setting `json:"blob_min_age"`
	Settle       Setting `json:"settle"`
}

// List returns the settings in print order.
func (s Settings) List() []Setting { return []Setting{s.ArchiveAfter, s.BlobMinAge, s.Settle} }

// Input is one setting's candidate sources, highest precedence first.
type Input struct {
	Flag, FlagName string // "" = not given
	Env, EnvName   string
}

// Inputs are the flag and environment values for each setting.
type Inputs struct {
	ArchiveAfter, BlobMinAge, Settle Input
}

// Environment variables read by the CLI (the kernel takes their values
// through Inputs).
const (
	EnvArchiveAfter = "PROOFGATE_PRUNE_ARCHIVE_AFTER"
	EnvBlobMinAge   = "PROOFGATE_PRUNE_BLOB_MIN_AGE"
	EnvSettle       = "PROOFGATE_PRUNE_SETTLE"
)

// Resolve computes the effective settings: a flag wins over the
// environment, which wins over the base (the contract's retention:
// section, else the default). A flag or variable may only lengthen a
// setting: one asking for less than the base is refused with a
// ReasonLooser error naming both.
func Resolve(base *contract.Retention, in Inputs) (Settings, error) {
	var s Settings
	var err error
	aa, ab := baseOf("archive_after", DefaultArchiveAfter, base, func(r *contract.Retention) contract.Duration { return r.ArchiveAfter })
	if s.ArchiveAfter, err = resolveOne("archive_after", in.ArchiveAfter, aa, ab, time.Duration(contract.MinArchiveAfter)); err != nil {
		return s, err
	}
	ba, bb := baseOf("blob_min_age", DefaultBlobMinAge, base, func(r *contract.Retention) contract.Duration { return r.BlobMinAge })
	if s.BlobMinAge, err = resolveOne("blob_min_age", in.BlobMinAge, ba, bb, time.Duration(contract.MinBlobMinAge)); err != nil {
		return s, err
	}
	settle := Setting{Name: "settle", Value: MinSettle, Text: MinSettle.String(), Source: FromDefault, Origin: "default"}
	if s.Settle, err = resolveOne("settle", in.Settle, settle.Value, settle, 0); err != nil {
		return s, err
	}
	return s, nil
}

// baseOf returns the base value of a setting and its Setting record.
func baseOf(name string, def time.Duration, base *contract.Retention, get func(*contract.Retention) contract.Duration) (time.Duration, Setting) {
	if base != nil {
		if v := time.Duration(get(base)); v > 0 {
			return v, Setting{Name: name, Value: v, Text: Age(v), Source: FromContract, Origin: "retention." + name}
		}
	}
	return def, Setting{Name: name, Value: def, Text: Age(def), Source: FromDefault, Origin: "default"}
}

// resolveOne picks the flag, else the variable, else the base; a given
// value below the base (or the floor) is refused.
func resolveOne(name string, in Input, baseVal time.Duration, base Setting, floor time.Duration) (Setting, error) {
	for _, c := range []struct{ v, origin, src string }{{in.Flag, in.FlagName, FromFlag}, {in.Env, in.EnvName, FromEnv}} {
		if c.v == "" {
			continue
		}
		d, err := contract.ParseAge(c.v)
		if err != nil {
			return Setting{}, &Error{Reason: ReasonSetting, Detail: fmt.Sprintf("%s: %v", c.origin, err)}
		}
		v := time.Duration(d)
		if v < baseVal {
			return Setting{}, &Error{Reason: ReasonLooser, Detail: fmt.Sprintf("%s %s is shorter than the %s %s (%s %s): settings can only make retention more conservative",
				c.origin, c.v, base.Source, base.Origin, name, base.Text)}
		}
		if v < floor {
			return Setting{}, &Error{Reason: ReasonLooser, Detail: fmt.Sprintf("%s %s is below the floor %s", c.origin, c.v, Age(floor))}
		}
		return Setting{Name: name, Value: v, Text: Age(v), Source: c.src, Origin: c.origin}, nil
	}
	return base, nil
}

// Age prints d as whole days when it is one ("30d"), else as a duration.
func Age(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
