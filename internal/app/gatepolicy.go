package app

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// A GatePolicy is a gate policy file (ADR 0043, ADR 0049): the policy
// document a verification summary names (bundle/vsa.Policy: {"bundle":
// <policy description>, "identities": {...}, "trust": [...]}), checked
// in beside the release workflow. bundle verify --policy and the verify
// action's input policy read it; each member stands for the flag or input
// its bundle.PolicyDescription tag names, and what a member sets is never
// also given by its flag or input.
type GatePolicy struct {
	vsa.Policy
	present map[string]bool // the bundle members the file holds
}

// ParseGatePolicy strictly decodes a gate policy file's bytes b (read
// within vsa.MaxPayload): unknown, duplicate or case-variant members are
// refused.
func ParseGatePolicy(b []byte) (*GatePolicy, error) {
	p := &GatePolicy{present: map[string]bool{}}
	if err := strictjson.Decode(b, &p.Policy); err != nil {
		return nil, err
	}
	// Which members are present (an absent member leaves its flag or
	// input alone): the same bytes, through the same strict decoder.
	var raw struct {
		Bundle map[string]json.RawMessage `json:"bundle"`
	}
	if err := strictjson.DecodeOpen(b, &raw); err != nil {
		return nil, err
	}
	for m := range raw.Bundle {
		p.present[m] = true
	}
	return p, nil
}

// Has reports whether the file holds the bundle member m.
func (p *GatePolicy) Has(m string) bool { return p.present[m] }

// A TrustPinError is trust material the policy pins that is not what the
// gate was given: no given file has the pinned name (Path ""), or the one
// that has it has another SHA-256.
type TrustPinError struct {
	Name, Want string // the pin: a base name and its sha256
	Path, Got  string // the given file of that name and its sha256
}

func (e *TrustPinError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("the policy pins trust material %q, which the gate was not given", e.Name)
	}
	return fmt.Sprintf("the policy pins %s at sha256 %s; %s has sha256 %s: the gate's trust material is not the one its policy names",
		e.Name, e.Want, e.Path, e.Got)
}

// CheckTrust requires each pinned trust file to be one of given (matched
// by base name; "" entries are skipped) with the pinned SHA-256. A pin
// that does not hold is a *TrustPinError; a file that cannot be read is
// its read error.
func (p *GatePolicy) CheckTrust(given ...string) error {
	for _, pin := range p.Trust {
		var match string
		for _, g := range given {
			if g != "" && filepath.Base(g) == pin.Name {
				match = g
			}
		}
		if match == "" {
			return &TrustPinError{Name: pin.Name, Want: pin.Digest["sha256"]}
		}
		d, err := bounded.SHA256File(match)
		if err != nil {
			return err
		}
		if d != pin.Digest["sha256"] {
			return &TrustPinError{Name: pin.Name, Want: pin.Digest["sha256"], Path: match, Got: d}
		}
	}
	return nil
}
