package shard

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/proofgate/proofgate/kernel/contract"
)

// ParseSpec parses "I/N" (1 <= I <= N <= MaxShards, decimal, no sign or
// leading zero).
func ParseSpec(s string) (Spec, error) {
	is, ns, ok := strings.Cut(s, "/")
	if !ok {
		return Spec{}, &SpecError{Value: s, Detail: "no \"/\""}
	}
	i, err1 := decimal(is)
	n, err2 := decimal(ns)
	switch {
	case err1 != nil:
		return Spec{}, &SpecError{Value: s, Detail: "I: " + err1.Error()}
	case err2 != nil:
		return Spec{}, &SpecError{Value: s, Detail: "N: " + err2.Error()}
	}
	sp := Spec{Index: i, Count: n}
	if err := sp.check(); err != nil {
		return Spec{}, &SpecError{Value: s, Detail: err.Error()}
	}
	return sp, nil
}

func decimal(s string) (int, error) {
	if s == "" || len(s) > 3 || (len(s) > 1 && s[0] == '0') || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a decimal number", s)
	}
	return strconv.Atoi(s)
}

func (s Spec) check() error {
	switch {
	case s.Count < 1 || s.Count > MaxShards:
		return fmt.Errorf("the shard count %d is not in 1..%d", s.Count, MaxShards)
	case s.Index < 1 || s.Index > s.Count:
		return fmt.Errorf("the shard index %d is not in 1..%d", s.Index, s.Count)
	}
	return nil
}

// Assign returns, for each shard 1..n, the check ids it executes, each
// shard's in contract order. The rule (docs/SPEC.md "Shards"): the checks
// are grouped into the connected components of the depends_on graph (a
// dependency chain stays in one shard); the components, largest first and
// among equals by their smallest check id (byte order), go one by one to
// the shard with the fewest checks so far, the lowest index among equals.
// It depends only on the check ids and their depends_on, so every job
// computes the same assignment.
func Assign(checks []contract.Check, n int) ([][]string, error) {
	if n < 1 || n > MaxShards {
		return nil, fmt.Errorf("shard count %d is not in 1..%d", n, MaxShards)
	}
	comps, err := components(checks)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(comps, func(a, b []string) int {
		if c := cmp.Compare(len(b), len(a)); c != 0 {
			return c
		}
		return strings.Compare(a[0], b[0])
	})
	shardOf := map[string]int{}
	load := make([]int, n)
	for _, comp := range comps {
		best := 0
		for i := 1; i < n; i++ {
			if load[i] < load[best] {
				best = i
			}
		}
		load[best] += len(comp)
		for _, id := range comp {
			shardOf[id] = best
		}
	}
	out := make([][]string, n)
	for i := range out {
		out[i] = []string{}
	}
	for _, c := range checks {
		out[shardOf[c.ID]] = append(out[shardOf[c.ID]], c.ID)
	}
	return out, nil
}

// components returns the connected components of the depends_on graph,
// each sorted by check id.
func components(checks []contract.Check) ([][]string, error) {
	parent := map[string]string{}
	for _, c := range checks {
		if _, dup := parent[c.ID]; dup {
			return nil, fmt.Errorf("check %q appears twice", c.ID)
		}
		parent[c.ID] = c.ID
	}
	find := func(x string) string {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for _, c := range checks {
		for _, d := range c.DependsOn {
			if _, ok := parent[d]; !ok {
				return nil, fmt.Errorf("check %q depends on unknown check %q", c.ID, d)
			}
			a, b := find(c.ID), find(d)
			if a != b {
				parent[max(a, b)] = min(a, b)
			}
		}
	}
	groups := map[string][]string{}
	for _, c := range checks {
		r := find(c.ID)
		groups[r] = append(groups[r], c.ID)
	}
	out := make([][]string, 0, len(groups))
	for _, g := range groups {
		slices.Sort(g)
		out = append(out, g)
	}
	return out, nil
}
