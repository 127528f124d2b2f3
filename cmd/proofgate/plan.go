package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/source"
	"github.com/proofgate/proofgate/kernel/contract"
)

// planFlags are shared by plan, run and retry.
type planFlags struct {
	profile     string
	allowDirty  bool
	contextFile string
	// implementedBy is the implementation run this plan verifies
	// (implemented.go).
	implementedBy string
	// repo is --repo: the repository the run records (repo.go).
	repo string
}

func (p *planFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&p.profile, "profile", "", "contract profile to resolve")
	c.Flags().BoolVar(&p.allowDirty, "allow-dirty", false, "plan on a work tree with uncommitted changes (recorded in the run)")
	c.Flags().StringVar(&p.contextFile, "context-file", "", "JSON context snapshot(s) to verify and attach")
	registerImplementedBy(c, p)
	registerRepo(c, p)
}

func (p *planFlags) load(g *globals) (*contract.Resolved, error) {
	c, err := contract.Load(g.contract, p.profile)
	if err != nil {
		return nil, usageErr(contractLoadErr(err))
	}
	return c, nil
}

// contractLoadErr adds what to do when there is no contract file at all.
func contractLoadErr(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (the path is relative to the current directory: cd to where .proofgate/ is, pass --contract FILE, or write one as docs/cli.md \"The contract\" shows)", err)
	}
	return err
}

func (p *planFlags) plan(ctx context.Context, g *globals, c *contract.Resolved, supersedes string) (*run.Run, error) {
	opts, err := p.options(ctx, g, c)
	if err != nil {
		return nil, err
	}
	opts.Supersedes = supersedes
	r, err := run.Plan(ctx, opts)
	return r, classify(err)
}

// options are the plan options the flags say.
func (p *planFlags) options(ctx context.Context, g *globals, c *contract.Resolved) (run.PlanOptions, error) {
	repo, err := repoDir(ctx)
	if err != nil {
		return run.PlanOptions{}, err
	}
	var snaps []run.Snapshot
	if p.contextFile != "" {
		if snaps, err = run.LoadContext(p.contextFile); err != nil {
			return run.PlanOptions{}, usageErr(err)
		}
	}
	origin, err := contractOrigin(repo, g.contract)
	if err != nil {
		return run.PlanOptions{}, err
	}
	ghRepo, err := runRepo(ctx, repo, p.repo)
	if err != nil {
		return run.PlanOptions{}, err
	}
	return run.PlanOptions{RepoDir: repo, StateDir: g.state, Contract: c, Origin: origin, Repo: ghRepo,
		AllowDirty: p.allowDirty, Context: snaps, ImplementedBy: p.implementedBy}, nil
}

// planConnected loads the contract, connects its runtimes (a missing Docker
// daemon fails here, before anything is recorded) and plans the run.
func (p *planFlags) planConnected(ctx context.Context, g *globals, ef execFlags, supersedes string) (*run.Run, *app.Runtimes, error) {
	c, err := p.load(g)
	if err != nil {
		return nil, nil, err
	}
	if err := checkCacheRoot(ctx, c, ef.cacheRoot); err != nil {
		return nil, nil, err
	}
	prov, err := connect(ctx, c, ef.progress(g))
	if err != nil {
		return nil, nil, err
	}
	r, err := p.plan(ctx, g, c, supersedes)
	if err != nil {
		prov.Close()
		return nil, nil, err
	}
	return r, prov, nil
}

func contractOrigin(repo, file string) (string, error) {
	abs, err := source.AbsReal(file)
	if err != nil {
		return "", envErr(err)
	}
	root, err := source.AbsReal(repo)
	if err != nil {
		return "", envErr(err)
	}
	if rel, err := source.RelLocal(root, abs); err == nil {
		return "file:" + rel, nil
	}
	return "file:" + abs, nil
}

func planCmd(g *globals) *cobra.Command {
	var pf planFlags
	var asJSON, implement bool
	c := &cobra.Command{
		Use:   "plan",
		Short: "Plan a run: freeze the contract and bind the source",
		Long: `Plan a run without executing it: resolve the contract, bind the commit, its
tree and the work-tree state (a dirty tree is refused unless --allow-dirty),
freeze contract.json and record run.planned. Execute it with 'proofgate exec'.
With --implement the run then enters IMPLEMENTING, where an agent works
through the contract's tools ('proofgate mcp RUN', 'proofgate tool exec');
'proofgate exec RUN' verifies it after its sessions ended.

  proofgate plan
  RUN=$(proofgate plan --implement)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			if implement {
				return planImplementCmd(ctx, g, &pf, asJSON)
			}
			c, err := pf.load(g)
			if err != nil {
				return err
			}
			r, err := pf.plan(ctx, g, c, "")
			if err != nil {
				return err
			}
			defer r.Close()
			if asJSON {
				return writeJSON(g.stdout, r.Report())
			}
			fmt.Fprintln(g.stdout, r.ID)
			return nil
		},
	}
	pf.register(c)
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&implement, "implement", false, "enter IMPLEMENTING: an agent session works on the run before verification")
	return c
}
