package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/replay"
)

// staleShown bounds the paths a STALE summary names on one line.
const staleShown = 5

// printStale says why a run is STALE, which paths changed, what to do
// about them, and the retry that then works: retry plans a new run, which
// a work tree with uncommitted changes refuses, so it comes last.
func printStale(w io.Writer, id string, si *run.StaleInfo) {
	if si == nil || len(si.Paths) == 0 {
		if si != nil {
			fmt.Fprintf(w, "stale: %s\n", esc(si.Reason))
		}
		fmt.Fprintf(w, "next: proofgate retry %s (a new run of the current commit and contract)\n", id)
		return
	}
	fmt.Fprintf(w, "stale: %s\n", esc(si.Reason))
	fmt.Fprintf(w, "changed: %s\n", boundedList(si.Paths, si.PathsCapped))
	if si.From == replay.Verifying {
		tops := topEntries(si.Paths)
		fmt.Fprintf(w, "hint: the checks wrote %s into the work tree: if that is test or build output, add it to .gitignore and commit that (or delete it and give those checks workspace: copy in the contract, committed)\n", boundedList(tops, si.PathsCapped))
	} else {
		fmt.Fprintln(w, "hint: the work tree changed after planning: commit, revert or git-ignore those changes")
	}
	fmt.Fprintf(w, "next: once 'git status' shows nothing to commit, proofgate retry %s (retry refuses a work tree with uncommitted changes)\n", id)
}

// boundedList joins the first staleShown of s, escaped, and says how many
// more there are.
func boundedList(s []string, capped bool) string {
	shown := s[:min(len(s), staleShown)]
	out := make([]string, len(shown))
	for i, p := range shown {
		out[i] = esc(p)
	}
	list := strings.Join(out, ", ")
	switch more := len(s) - len(shown); {
	case capped:
		list += fmt.Sprintf(" and %d or more others ('git status' lists them all)", more)
	case more > 0:
		list += fmt.Sprintf(" and %d more", more)
	}
	return list
}

// topEntries returns the top-level entries of paths in first-seen order: a
// file at the root as it is, anything deeper as its first directory with a
// trailing slash (".nyc_output/out.json" → ".nyc_output/").
func topEntries(paths []string) []string {
	var tops []string
	for _, p := range paths {
		p = strings.TrimSuffix(strings.TrimSuffix(p, " (submodule)"), " (skip-worktree/assume-unchanged)")
		if dir, _, ok := strings.Cut(p, "/"); ok {
			p = dir + "/"
		}
		if !slices.Contains(tops, p) {
			tops = append(tops, p)
		}
	}
	return tops
}
