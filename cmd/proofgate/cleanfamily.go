package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// The cleanup family (ADR 0047): everything that removes what ProofGate
// or a contract's checks leave behind is a subcommand of clean, each a dry
// run unless --apply except orphans (which only ever touches what a dead
// harness left). The earlier spellings stay, hidden, for one release:
// prune (clean runs), cache prune (clean caches), gc (clean orphans); clean
// alone is still clean roots.
func addCleanCommands(root *cobra.Command, g *globals) {
	family := cleanCmd(g)
	family.Use = "clean [roots|runs|caches|orphans] [flags]"
	family.Short = "Remove what runs and checks leave behind: cleanup roots, old runs, caches, orphans (dry run unless --apply)"
	family.Long = `Remove what runs and checks leave behind, one kind per subcommand:

    clean roots     the contents of the contract's cleanup roots (build outputs)
    clean runs      archive old terminal runs, reclaim unreachable blobs
    clean caches    old pull-request and branch cache scopes
    clean orphans   check processes, containers and run caches of dead harnesses

Each is a dry run that lists what would go unless --apply is given, except
orphans, which acts at once: it only ever touches what a harness that is
provably dead left behind. 'proofgate clean' with no subcommand is 'clean
roots', and takes its flags.

The earlier spellings still work, hidden: 'prune' is 'clean runs', 'cache
prune' is 'clean caches', 'gc' is 'clean orphans'.`
	family.Example = ""
	roots := cleanCmd(g)
	roots.Use = strings.Replace(roots.Use, "clean", "roots", 1)
	runs := pruneCmd(g)
	runs.Use = strings.Replace(runs.Use, "prune", "runs", 1)
	caches := cachePruneCmd(g)
	caches.Use = strings.Replace(caches.Use, "prune", "caches", 1)
	orphans := gcCmd(g)
	orphans.Use = "orphans [--cache-root DIR]"
	family.AddCommand(roots, runs, caches, orphans)

	prune, gc, cache := pruneCmd(g), gcCmd(g), cacheCmd(g)
	prune.Hidden, gc.Hidden, cache.Hidden = true, true, true
	root.AddCommand(family, prune, gc, cache)
}
