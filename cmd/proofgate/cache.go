package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/cache"
)

func cacheCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "cache", Short: "Work with the cache root that keeps the contract's caches"}
	c.AddCommand(cachePruneCmd(g))
	return c
}

type cachePruneFlags struct {
	root, olderThan string
	scopes          []string
	apply, asJSON   bool
}

func cachePruneCmd(g *globals) *cobra.Command {
	var f cachePruneFlags
	c := &cobra.Command{
		Use:   "prune [--cache-root DIR] [--older-than AGE] [--scope S]... [--apply] [--json]",
		Short: "Remove old pull-request and branch cache scopes (dry run unless --apply)",
		Long: `Remove cache scopes that no run will use again.

A cache root (--cache-root, else $PROOFGATE_CACHE_ROOT, else
$RUNNER_TEMP/proofgate-cache, else the user cache directory's
proofgate/caches) holds one directory per scope, the set of runs whose
writes it keeps: default (the default branch), local (CLI runs), pr-<N>
(pull request N), branch-<16 hex> (pushes to another branch) and
commit-<sha> (a run bound to a commit that is not its event's branch
head, such as an issue_comment run of a pull request's head). On a
GitHub-hosted runner the root goes with the runner; on a self-hosted one,
or on a laptop, every pull request's scope stays until it is pruned.

Only pr-<N>, branch-<16 hex> and commit-<sha> scopes are candidates: default and local
are never touched, and naming them with --scope is refused (exit 2), as is
a malformed or absent scope name. --older-than AGE (e.g. 14d, 36h) selects
the scopes whose newest activity (the scope directory, its lock and state
files and its cache directories) is older than AGE; --scope S (repeatable)
selects scopes by name; with both, a scope must be named and old. One of
them is required.

Without --apply nothing changes: each scope is listed with its newest
activity, its bytes and what --apply would do. With --apply a scope whose
cache a run has mounted (its lock is held) is kept and reported in-use;
every other selected scope is renamed to <root>/.pruning-<scope>-<8 hex>
and removed. A prune killed midway leaves such a directory, unreachable by
any scope name; the next apply removes it. It also removes, whatever the
selection, the run-lifetime cache directories (run-<16 hex>, contract
lifetime: run) of runs whose harness is gone (their owner lock is free),
and keeps those of running runs (in-use). Symlinks are never followed: a
symlinked scope is skipped, a symlinked root refused.

Exit 0 when the prune ran (skipped and in-use scopes are in the report),
2 on bad usage, 4 when the root cannot be read.

Examples:
    proofgate clean caches --older-than 14d            # what would go
    proofgate clean caches --older-than 14d --apply
    proofgate clean caches --scope pr-7 --apply --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCachePrune(g, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.root, "cache-root", "", "the cache root (default $"+cache.EnvRoot+", else $RUNNER_TEMP/proofgate-cache, else the user cache directory's proofgate/caches)")
	fl.StringVar(&f.olderThan, "older-than", "", "select scopes with no activity for AGE (e.g. 14d, 36h)")
	fl.StringArrayVar(&f.scopes, "scope", nil, "select scope S by name (pr-<N>, branch-<16 hex> or commit-<sha>; repeatable)")
	fl.BoolVar(&f.apply, "apply", false, "remove (default: dry run)")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
	return c
}

func runCachePrune(g *globals, f cachePruneFlags) error {
	out, err := app.PruneCaches(app.CachePruneOptions{Root: f.root, OlderThan: f.olderThan, Scopes: f.scopes, Apply: f.apply, Now: time.Now, Getenv: os.Getenv})
	if err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(g.stdout, out)
	}
	printCachePrune(g.stdout, out)
	return nil
}

func printCachePrune(w io.Writer, out *app.CachesPruned) {
	if out.Apply {
		fmt.Fprintf(w, "cache prune: applied in %s\n", esc(out.Root))
	} else {
		fmt.Fprintf(w, "cache prune: dry run in %s (nothing changed; --apply does it)\n", esc(out.Root))
	}
	for _, s := range out.Leftovers {
		why := "left by a killed prune"
		if strings.HasPrefix(s.Name, "run-") {
			why = "run-lifetime caches of a run that is gone"
			if s.Action == cache.ActionInUse {
				why = "run-lifetime caches of a running run"
			}
		}
		fmt.Fprintf(w, "  %-13s %-34s %12d bytes  (%s)%s\n", s.Action, esc(s.Name), s.Bytes, why, reasonSuffix(s))
	}
	for _, s := range out.Scopes {
		act := "-"
		if !s.Activity.IsZero() {
			act = s.Activity.Format(time.RFC3339) + " (" + ago(time.Since(s.Activity)) + " ago)"
		}
		b := fmt.Sprintf("%d", s.Bytes)
		if s.BytesTruncated {
			b = "≥" + b
		}
		fmt.Fprintf(w, "  %-13s %-24s last active %s, %s bytes%s\n", s.Action, esc(s.Name), act, b, reasonSuffix(s))
	}
	verb := "would remove"
	if out.Apply {
		verb = "removed"
	}
	fmt.Fprintf(w, "%s %d of %d scopes and leftovers (%d bytes)\n", verb, out.Removed, len(out.Scopes)+len(out.Leftovers), out.Bytes)
}

// ago is an age for people: whole days from two days on, else minutes.
func ago(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.Round(time.Minute).String()
}

func reasonSuffix(s cache.ScopeReport) string {
	if s.Reason == "" {
		return ""
	}
	return ": " + esc(s.Reason)
}
