package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/shard"
)

// Shards (docs/SPEC.md "Shards", ADR 0026): 'proofgate exec RUN --shard
// I/N --out DIR' executes one shard of a planned run into a signed shard
// directory; 'proofgate merge RUN DIR...' verifies the shards and appends
// them to the run.

// shardFlags are exec's shard flags.
type shardFlags struct {
	spec, out, key string
	keyless        keylessExportFlags
}

func (f *shardFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.spec, "shard", "", "execute only shard I/N of the run's checks (I in 1..N) into --out, signed with --key or --keyless; the run stays PLANNED")
	fl.StringVar(&f.out, "out", "", "with --shard: the shard directory to write (new or empty)")
	fl.StringVar(&f.key, "key", "", "with --shard: the signing key of the shard (PKCS#8 PEM file or env:VAR)")
	f.keyless.register(c)
}

// active reports whether exec was asked for a shard; shard flags without
// --shard are a usage error.
func (f *shardFlags) active(c *cobra.Command) (bool, error) {
	changed := c.Flags().Changed
	if f.spec == "" {
		for _, n := range []string{"out", "key", "keyless", "id-token-file", "fulcio-url", "tsa-url", "rekor-url"} {
			if changed(n) {
				return false, usageErr(fmt.Errorf("--%s needs --shard I/N", n))
			}
		}
		return changed("shard"), nil
	}
	return true, nil
}

// execShard executes one shard and signs its directory.
func (f *shardFlags) execShard(ctx context.Context, c *cobra.Command, g *globals, ef *execFlags, id string) error {
	spec, err := shard.ParseSpec(f.spec)
	if err != nil {
		return usageErr(err)
	}
	if f.out == "" {
		return usageErr(errors.New("--shard needs --out DIR, the shard directory to write"))
	}
	s, ms, err := f.keyless.signers(c.Flags().Changed, f.key)
	if err != nil {
		return err
	}
	repo, err := repoDir(ctx)
	if err != nil {
		return err
	}
	r, err := run.Open(g.state, id)
	if err != nil {
		return classify(err)
	}
	id, rc := r.ID, r.Contract
	r.Close()
	progress := ef.progress(g)
	p, err := connect(ctx, rc, progress)
	if err != nil {
		return err
	}
	defer p.Close()
	hb, err := heartbeat()
	if err != nil {
		return err
	}
	caches, err := cacheStore(rc, ef.cacheRoot, repo)
	if err != nil {
		return err
	}
	res, err := app.ExecShard(ctx, id, app.ShardOptions{Spec: spec, Out: f.out, Key: s, Keyless: ms, Exec: run.ExecOptions{RepoDir: repo, StateDir: g.state,
		Runtimes: p.Providers, Jobs: ef.jobs, Progress: textProgress(progress), Heartbeat: hb, Caches: caches}})
	if err != nil {
		return classifyShard(err)
	}
	return printShard(g, res, ef.asJSON)
}

func printShard(g *globals, res *shard.Result, asJSON bool) error {
	if asJSON {
		return writeJSON(g.stdout, struct {
			Dir    string   `json:"dir"`
			Shard  string   `json:"shard"`
			Checks []string `json:"checks"`
			Failed int      `json:"failed"`
			Head   string   `json:"head"`
			Length int      `json:"length"`
		}{res.Dir, res.Spec.String(), res.Checks, res.Failed, res.Head, res.Length})
	}
	fmt.Fprintf(g.stdout, "shard %s: %d checks, %d did not pass, log %d events ending %s\nwrote %s (merge it with 'proofgate merge RUN DIR...')\n",
		res.Spec, len(res.Checks), res.Failed, res.Length, res.Head, esc(res.Dir))
	return nil
}

// classifyShard maps shard refusals to exit codes: a bad flag value is
// usage (2), a refused shard or merge is refused (1); anything else as
// classify says.
func classifyShard(err error) error {
	var (
		se *shard.SpecError
		oe *shard.OutError
		me *shard.MergeError
	)
	switch {
	case errors.As(err, &se), errors.As(err, &oe):
		return usageErr(err)
	case errors.As(err, &me):
		return refusedErr(err)
	}
	return classify(err)
}

// mergeFlags are merge's flags.
type mergeFlags struct {
	trust   string
	asJSON  bool
	keyless keylessVerifyFlags
}

func mergeCmd(g *globals) *cobra.Command {
	var f mergeFlags
	c := &cobra.Command{
		Use:   "merge RUN SHARD-DIR... (--trust trust.json | --trusted-root trusted_root.json --signer-workflow W[@REF]) [--json]",
		Short: "Verify the shards of a planned run and merge them into it",
		Long: `Merge the shard directories that 'proofgate exec RUN --shard I/N --out DIR'
wrote (in any order) into the PLANNED run RUN of this state directory.

Every shard is verified before anything is appended: its signature over
shard.json (a key of --trust, or keyless against --trusted-root and the
signer identity), its binding (the same run, contract, source and planned
log), its log's chain, digest and contents, its blobs; then the shards
together: the same N, each of 1..N exactly once, each check in exactly one
shard, no dependency across shards. A refusal names the shard directory and
its reason (missing, duplicate, foreign, tampered, untrusted, overlap,
running, order) and leaves the run as it was.

The run's log then records each shard's check results and a shard.merged
event (the shard's chain head and length), and the run concludes as after
'proofgate exec': exit 3 when every check passed and the run awaits approval,
1 when it is BLOCKED (or STALE). Approve and export it as any other run.`,
		Example: `  proofgate merge latest shards/1 shards/2 shards/3 --trust trust.json`,
		Args:    cobra.MinimumNArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			v, err := f.verifier(c)
			if err != nil {
				return err
			}
			res, err := app.Merge(ctx, g.state, args[0], args[1:], v)
			if err != nil {
				return classifyShard(err)
			}
			if !f.asJSON {
				fmt.Fprintf(g.stdout, "merged %d shards, %d checks\n", res.Shards, res.Checks)
			}
			return report(g, res.Report, res.Stale, f.asJSON, false)
		},
	}
	c.Flags().StringVar(&f.trust, "trust", "", "trust store (trust.json) holding the shard signers' keys")
	c.Flags().BoolVar(&f.asJSON, "json", false, "print the merged run as JSON")
	f.keyless.register(c)
	return c
}

// verifier is the shard signature verifier the flags describe.
func (f *mergeFlags) verifier(c *cobra.Command) (*bundle.ShardVerifier, error) {
	changed := c.Flags().Changed
	if changed("trust") && f.trust == "" {
		return nil, usageErr(errors.New("--trust is empty; an empty value never means \"any\""))
	}
	if err := f.keyless.check(changed); err != nil {
		return nil, err
	}
	if f.trust == "" && f.keyless.trustedRoot == "" {
		return nil, usageErr(errors.New("--trust is required (or --trusted-root, for keyless shards): a merge trusts only shards it verified"))
	}
	vf := verifyFlags{trust: f.trust, keyless: f.keyless}
	vs, mv, err := vf.verifyStores()
	if err != nil {
		return nil, err
	}
	return &bundle.ShardVerifier{Keys: vs, Keyless: mv}, nil
}
