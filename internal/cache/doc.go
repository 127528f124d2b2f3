// Package cache keeps ProofGate's declared caches (contract "caches") on
// the host and decides, from a run's source facts, which of them a run may
// write: the kernel owns the scoping, the CI adapter only feeds the facts
// (default branch or pull request number), and a runtime only mounts what
// it is given.
//
// # Layout
//
// A Store has a root directory owned by the harness (mode 0700; the CLI's
// --cache-root or PROOFGATE_CACHE_ROOT, else $RUNNER_TEMP/proofgate-cache,
// else the user cache directory's proofgate/caches; never inside the
// repository, whose digest it would change and whose readonly mount would
// expose it). Under it, one directory per scope (mode 0700) and in it:
//
//	<root>/<scope>/<name>/        the cache's tree (mode 0777: the sandbox user writes it)
//	<root>/<scope>/<name>.lock    flock: exclusive while mounted rw, shared while mounted ro
//	<root>/<scope>/<name>.state   JSON record of the last write: {"generation":3,
//	                              "digest":"sha256:…","stamp":"sha256:…","written_by":"<run>/<check>"}
//
// # Scopes
//
// A scope names whose writes a directory holds:
//
//	default       runs bound to the default branch's head (not a pull request)
//	pr-<N>        pull request N's own runs
//	branch-<h>    pushes to another branch (h: first 16 hex of SHA-256 of the ref)
//	commit-<sha>  any other run: private to the commit it binds
//	local         the CLI outside GitHub
//
// ScopeFor decides from facts a pull request cannot choose: the event, the
// ref and head commit GitHub states for it (GITHUB_REF, GITHUB_SHA, the
// payload's ref, after and default_branch) and the commit the run binds
// (its planned HEAD, which the workflow chose). A run writes default or a
// branch scope only when it binds exactly that head, under an event whose
// GITHUB_SHA is the head of the ref it names (push, workflow_dispatch,
// schedule, repository_dispatch, issue_comment, workflow_run); a pull
// request's event writes pr-<N>; everything else (an issue_comment run of
// a pull request's head, a merge queue entry, an unknown event, any
// disagreement between the facts) its commit's scope.
//
// A run writes only its own scope. Runs of pr-<N>, branch-<h> and
// commit-<sha> read the default scope: a read-only use mounts the run's
// own directory when it exists, else default's; a writable use mounts the
// run's own directory, created on first use as a copy of default's
// (regular files, directories and in-tree relative symlinks; the copy's
// directories made 0777 and its owner-writable files 0666, so the sandbox
// user can write the copy). So a pull request never writes what a
// default-branch run mounts, and nothing of pr-<N> or commit-<sha> is ever
// mounted into a run of another scope: the default and local scopes read
// only themselves.
//
// # Mounting
//
// Acquire takes, in lock-path order (so two checks cannot deadlock), an
// exclusive lock for each writable use and a shared lock for each read-only
// one: two checks writing one cache are serialized, across runs and
// processes too, and nothing ProofGate runs writes a directory while it is
// mounted read-only. It refuses (ReasonSymlink) a root, scope or cache
// directory that is a symlink, and a tree holding an absolute symlink or a
// relative one that leaves the cache directory, and (ReasonSpecial)
// anything but directories, regular files and symlinks; symlinks are never
// followed. It then takes the tree digest, recorded in check.started and in
// the runtime profile:
//
//	digest = "sha256:" + hex(SHA-256 of one line per entry, in walk order:
//	         "<d|f|l> <perm octal> <size> <mtime unix ns> <slash path>[ -> <link target>]\n")
//
// Walk order is depth first, a directory's line before its entries, each
// directory's names in byte order ("a/x" precedes "a-b").
//
// On Linux the walk resolves no path (openat/fstat per directory,
// getdents64, fstatat per entry, on several workers) and produces the same
// lines as the portable walk. A writable use first opens the tree for the
// sandbox user: the cache directory and its directories the harness owns
// become 0777, its owner-writable files 0666 (read-only ones stay so).
//
// It covers names, types, modes, sizes and modification times, not file
// bytes (hashing a build cache before every check would cost more than the
// check). A second value, the stamp, adds each entry's inode and ctime,
// which user space cannot set back: Release recomputes it, and a read-only
// directory whose stamp changed while it was mounted (or between the digest
// and the mount) fails the check with ReasonChanged; after a writable use
// the new digest and stamp are recorded in <name>.state with the next
// generation. At Acquire, a stamp that differs from the recorded one makes
// the provenance "unrecorded": the directory changed outside ProofGate
// (restored by actions/cache, or tampered with) since the last recorded
// write. What this proves: a result's cache state is named by digest and
// provenance; it does not prove that an unrecorded tree is benign.
//
// # Run-lifetime caches
//
// A cache declared with lifetime: run (ADR 0032) lives for one execution
// of checks (a run, or a shard of one) in a RunDir (Store.OpenRun):
//
//	<root>/run-<16 hex>.lock      owner lock: flock held exclusively while the run goes on
//	<root>/run-<16 hex>/<name>/   the cache's tree, with <name>.lock and <name>.state beside it
//
// The name is random, so no other run or scope ever mounts it; uses with
// Use.Run go there through RunDir.Acquire (the same locks, walks, digests
// and refusals as every cache; Scope "run-<16 hex>", Lifetime "run"), and
// RunDir.Close removes it. SweepRuns removes the directories whose owner
// lock is free — their harness is gone, however it ended — and runs at
// every OpenRun and in Prune (as leftovers).
package cache
