package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	goruntime "runtime"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/source"
	"github.com/proofgate/proofgate/kernel/actor"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

// addKernelCommands registers the run lifecycle verbs.
func addKernelCommands(root *cobra.Command, g *globals) {
	root.AddCommand(contractCmd(g), planCmd(g), runCmd(g), execCmd(g), mergeCmd(g), statusCmd(g), auditAlias(g),
		listCmd(g), outputCmd(g), approveCmd(g), cancelCmd(g), retryCmd(g), versionCmd(g))
	ev := eventsCmd(root)
	ev.AddCommand(eventsVerifyCmd(g), eventsUnlockCmd(g))
}

// classify gives err its exit code: the class its own type declares
// (every typed error of the kernel says which through errors.Is; see
// kernel/exit), with the next step added where one helps; a file the
// system could not read or write is the environment's; anything else is
// a refusal.
func classify(err error) error {
	if err == nil {
		return nil
	}
	err = runHint(err)
	var (
		ee   *exit.Error
		held *lock.HeldError
		pe   *fs.PathError
	)
	switch {
	case errors.As(err, &ee):
		return err
	case errors.As(err, &held):
		return refusedErr(fmt.Errorf("%w: another proofgate is writing this run; wait for it, or if 'proofgate status RUN' says its writer is dead, run 'proofgate events unlock RUN --actor NAME --older-than DUR' first", err))
	}
	if c, ok := exit.Of(err); ok {
		return exit.Wrap(c, err)
	}
	if errors.As(err, &pe) {
		return envErr(err)
	}
	return refusedErr(err)
}

// checkNames refuses an --actor that is not a printable one-line name and
// a --reason that is not printable one-line text (exit 2): a newline or an
// escape sequence in either would forge lines in status and audit.
func checkNames(name, reason string) error {
	if err := actor.Check("--actor", name); err != nil {
		return usageErr(err)
	}
	if err := printable.CheckText("--reason", reason); err != nil {
		return usageErr(err)
	}
	return nil
}

// esc escapes untrusted text for the terminal.
func esc(s string) string { return printable.Escape(s) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// repoDir returns the repository root containing the working directory.
func repoDir(ctx context.Context) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", envErr(err)
	}
	root, err := source.Root(ctx, wd)
	if err != nil {
		return "", usageErr(fmt.Errorf("run proofgate inside a git repository: %w", err))
	}
	return root, nil
}

// decision is a run opened for a human decision (approve, authorize),
// with the work tree's freshness it checks and the command's context.
type decision struct {
	ctx    context.Context
	cancel context.CancelFunc
	fresh  run.Freshness
	r      *run.Run
}

func (d *decision) close() {
	d.r.Close()
	d.cancel()
}

// openDecision checks a decision's flags (--actor, --reason with
// --reject, both printable) and opens run id for it.
func openDecision(g *globals, id, actor, reason string, reject bool) (*decision, error) {
	switch {
	case actor == "":
		return nil, usageErr(errors.New("--actor is required"))
	case reject && reason == "":
		return nil, usageErr(errors.New("--reject needs --reason"))
	}
	if err := checkNames(actor, reason); err != nil {
		return nil, err
	}
	ctx, cancel := signalContext()
	f, err := freshness(ctx, g)
	if err != nil {
		cancel()
		return nil, err
	}
	r, err := run.Open(g.state, id)
	if err != nil {
		cancel()
		return nil, classify(err)
	}
	return &decision{ctx: ctx, cancel: cancel, fresh: f, r: r}, nil
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func contractCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "contract", Short: "Work with the contract"}
	var profile string
	var asJSON bool
	check := &cobra.Command{
		Use:   "check",
		Short: "Validate the contract and print its hash",
		Long: `Validate the contract (--contract, default .proofgate/contract.yaml) against
the published JSON Schema and the semantic rules, resolve --profile, and print
the contract hash: sha256 of the RFC 8785 canonical JSON of the resolved
contract. Exit 0 valid, 2 invalid (the error names the file and field).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := contract.Load(g.contract, profile)
			if err != nil {
				return usageErr(contractLoadErr(err))
			}
			h, err := r.Hash()
			if err != nil {
				return usageErr(err)
			}
			return printContractCheck(g, r, h, asJSON)
		},
	}
	check.Flags().StringVar(&profile, "profile", "", "resolve this profile")
	check.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.AddCommand(check)
	return c
}

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
	abs, err := absReal(file)
	if err != nil {
		return "", envErr(err)
	}
	root, err := absReal(repo)
	if err != nil {
		return "", envErr(err)
	}
	if rel, err := relLocal(root, abs); err == nil {
		return "file:" + rel, nil
	}
	return "file:" + abs, nil
}

// execFlags are shared by run, exec and retry.
type execFlags struct {
	jobs      int
	asJSON    bool
	quiet     bool
	cacheRoot string
}

func (e *execFlags) register(c *cobra.Command) {
	c.Flags().IntVar(&e.jobs, "jobs", 0, "checks to run in parallel (default: the number of CPUs)")
	c.Flags().BoolVar(&e.asJSON, "json", false, "print the result as JSON")
	c.Flags().BoolVarP(&e.quiet, "quiet", "q", false, "no progress on stderr")
	registerCacheRoot(c, &e.cacheRoot)
	c.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if !cmd.Flags().Changed("jobs") {
			e.jobs = goruntime.NumCPU()
		}
		if e.jobs < 1 {
			return usageErr(fmt.Errorf("--jobs must be at least 1, not %d", e.jobs))
		}
		_, err := heartbeat() // refused before a run is planned
		return err
	}
}

// execute runs a planned run and reports it; the exit code follows the state.
func (e *execFlags) execute(ctx context.Context, g *globals, r *run.Run) error {
	progress := e.progress(g)
	p, err := connect(ctx, r.Contract, progress)
	if err != nil {
		return err
	}
	defer p.Close()
	return e.executeWith(ctx, g, r, p)
}

func (e *execFlags) progress(g *globals) io.Writer {
	if e.quiet {
		return nil
	}
	return g.stderr
}

// executeWith runs a planned run with connected runtimes.
func (e *execFlags) executeWith(ctx context.Context, g *globals, r *run.Run, p *app.Runtimes) error {
	repo, err := repoDir(ctx)
	if err != nil {
		return err
	}
	progress := e.progress(g)
	if progress != nil {
		fmt.Fprintf(progress, "run %s: %d checks, --jobs %d\n", r.ID, len(r.Contract.Checks), e.jobs)
	}
	hb, err := heartbeat()
	if err != nil {
		return err
	}
	caches, err := cacheStore(r.Contract, e.cacheRoot, repo)
	if err != nil {
		return err
	}
	if err := r.Exec(ctx, run.ExecOptions{RepoDir: repo, StateDir: g.state, Runtimes: p.Providers, Jobs: e.jobs,
		Progress: textProgress(progress), Heartbeat: hb, Caches: caches}); err != nil {
		return classify(err)
	}
	return report(g, r.Report(), r.Stale(), e.asJSON, e.quiet)
}

// runDoc is run --json: the report and, for a STALE run, why.
type runDoc struct {
	*replay.Report
	Stale *run.StaleInfo `json:"stale,omitempty"`
}

// report prints a run's result and returns the state's exit code.
func report(g *globals, rep *replay.Report, stale *run.StaleInfo, asJSON, quiet bool) error {
	if asJSON {
		if err := writeJSON(g.stdout, runDoc{rep, stale}); err != nil {
			return err
		}
	} else {
		printReport(g.stdout, rep, stale)
		printFailures(g, rep)
	}
	return stateExit(rep.State)
}

func stateExit(s replay.State) error {
	switch s {
	case replay.Complete:
		return nil
	case replay.AwaitingApproval:
		return silent(exit.Awaiting)
	case replay.Planned, replay.Implementing:
		return nil
	}
	return silent(exit.Refused)
}

func printReport(w io.Writer, rep *replay.Report, stale *run.StaleInfo) {
	fmt.Fprintf(w, "run %s: %s\n", rep.RunID, rep.State)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tOUTCOME\tEXIT\tDURATION\tDETAIL")
	for _, c := range rep.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", esc(c.ID), esc(string(c.Outcome)), c.ExitCode, time.Duration(c.DurationMS)*time.Millisecond, esc(c.Detail))
	}
	tw.Flush()
	if rep.VerificationDigest != "" {
		fmt.Fprintf(w, "verification_digest %s\n", rep.VerificationDigest)
	}
	for _, d := range rep.Decisions {
		fmt.Fprintf(w, "decision %s by %s at %s %s\n", esc(d.Decision), esc(d.Actor), esc(d.Time), esc(d.Reason))
	}
	printAuthorizations(w, rep)
	switch rep.State {
	case replay.AwaitingApproval:
		fmt.Fprintf(w, "next: proofgate approve %s --actor NAME\n", rep.RunID)
	case replay.Blocked:
		fmt.Fprintf(w, "next: 'proofgate output %s CHECK' shows why (its stderr and stdout); fix, commit, then 'proofgate retry %s'\n", rep.RunID, rep.RunID)
	case replay.Stale:
		printStale(w, rep.RunID, stale)
	}
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

func runCmd(g *globals) *cobra.Command {
	var pf planFlags
	var ef execFlags
	c := &cobra.Command{
		Use:   "run",
		Short: "Plan and execute a run, then wait for approval",
		Long: `Plan a run from the contract and execute every check (in dependency order,
--jobs at a time). When every check passed the run awaits approval (exit 3);
otherwise it is BLOCKED (exit 1). Progress goes to stderr, one line per check
as it starts and ends, and a heartbeat line (elapsed time, bytes of output)
every 30 s while it runs (PROOFGATE_HEARTBEAT=10s changes the interval).

  proofgate run                 # .proofgate/contract.yaml
  proofgate run --profile quick --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			r, p, err := pf.planConnected(ctx, g, ef, "")
			if err != nil {
				return err
			}
			defer p.Close()
			defer r.Close()
			return ef.executeWith(ctx, g, r, p)
		},
	}
	pf.register(c)
	ef.register(c)
	return c
}

func execCmd(g *globals) *cobra.Command {
	var ef execFlags
	var sf shardFlags
	c := &cobra.Command{
		Use:   "exec RUN",
		Short: "Execute a planned run",
		Long: `Execute the checks of a run made with 'proofgate plan' (PLANNED), in
dependency order, --jobs at a time, with the contract frozen at planning.
Like 'proofgate run': exit 3 when every check passed and the run awaits
approval, 1 when it is BLOCKED. RUN is a run id or "latest".

With --shard I/N --out DIR (--key K | --keyless) only the checks of shard
I of N (a deterministic assignment that keeps each depends_on chain in one
shard) run, into the new shard directory DIR, which is then signed; the run
stays PLANNED, and 'proofgate merge RUN DIR...' merges the N shards (exit 0
once the shard is written, whatever its checks' outcomes: the merge decides).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			if on, err := sf.active(cmd); err != nil || on {
				if err != nil {
					return err
				}
				return sf.execShard(ctx, cmd, g, &ef, args[0])
			}
			r, err := run.Open(g.state, args[0])
			if err != nil {
				return classify(err)
			}
			defer r.Close()
			return ef.execute(ctx, g, r)
		},
	}
	ef.register(c)
	sf.register(c)
	return c
}

func freshness(ctx context.Context, g *globals) (run.Freshness, error) {
	repo, err := repoDir(ctx)
	if err != nil {
		return run.Freshness{}, err
	}
	return run.Freshness{RepoDir: repo, StateDir: g.state}, nil
}

func statusCmd(g *globals) *cobra.Command {
	var asJSON, audit bool
	c := &cobra.Command{
		Use:   "status RUN [--audit] [--json]",
		Short: "Reconcile a run and report its state (--audit: every check, decision and defect)",
		Long: `Reconcile a run and report its state.

The run's projection (run.json) is checked against its event log, the
verification digest is recomputed and every evidence blob is re-hashed before
anything is reported. A run that does not reconcile is refused (exit 1) with
the reason. A run whose code or contract changed since planning is moved to
STALE. RUN is a run id or "latest".

With --audit the report also names the chain (length and head), the
contract hash, the source commit and tree, every evidence blob re-hashed,
and each agent call's decisions in full. --json prints the same object
either way. 'proofgate audit RUN' is the earlier spelling of
'proofgate status RUN --audit'.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return status(g, args[0], audit, asJSON)
		},
	}
	c.Flags().BoolVar(&audit, "audit", false, "also print the chain, the source, every evidence blob and each call's decisions")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// auditAlias keeps 'proofgate audit RUN' working, hidden, as 'status
// RUN --audit' (ADR 0045).
func auditAlias(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:    "audit RUN",
		Short:  "Same as 'status RUN --audit'",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return status(g, args[0], true, asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func status(g *globals, id string, audit, asJSON bool) error {
	ctx, cancel := signalContext()
	defer cancel()
	f, err := freshness(ctx, g)
	if err != nil {
		return err
	}
	st, err := run.Inspect(ctx, g.state, id, f)
	if err != nil {
		return classify(err)
	}
	if asJSON {
		if err := writeJSON(g.stdout, withAgentNotes(st)); err != nil {
			return err
		}
	} else {
		printReport(g.stdout, st.Report, st.Stale)
		printFailures(g, st.Report)
		printStatusNotes(g.stdout, st, audit)
	}
	return stateExit(st.State)
}

func printStatusNotes(w io.Writer, st *run.Status, audit bool) {
	for _, c := range st.Interrupted {
		fmt.Fprintf(w, "interrupted: check %s started and never finished (the writer is gone); recover with 'proofgate events unlock %s --actor NAME --older-than 0s' (if its lock is still there) then 'proofgate retry %s' or 'proofgate cancel %s --actor NAME --reason TEXT'\n", c, st.RunID, st.RunID, st.RunID)
	}
	if st.TornTail {
		fmt.Fprintln(w, "torn tail: the log ends in a partial line (a writer was killed mid-append); the next writer records its recovery")
	}
	if d := st.DecisionPending; d != nil {
		fmt.Fprintf(w, "decision pending: the decision of %s moves the run to %s, and its writer died before recording that; the next writer records it (if the writer's lock remains: 'proofgate events unlock %s --actor NAME --older-than 0s')\n", d.Actor, d.To, st.RunID)
	}
	for _, r := range st.StaleReasons {
		if st.Stale == nil { // a live writer holds the run: not recorded yet
			fmt.Fprintf(w, "stale: %s\n", esc(r))
		}
	}
	printSessions(w, st.Report, audit)
	if a := st.Archived; a != nil {
		fmt.Fprintf(w, "archived: read from %s (%s, as the prune log recorded it); the run is read-only\n", a.Archive, a.Digest)
	}
	if st.Writer != nil {
		state := "dead"
		if st.Writer.Alive {
			state = "alive"
		}
		fmt.Fprintf(w, "writer: pid %d on %s since %s (%s)\n", st.Writer.PID, esc(st.Writer.Host), st.Writer.Created.Format(time.RFC3339), state)
	}
	if audit {
		fmt.Fprintf(w, "chain: %d events, head %s\ncontract_hash %s\nsource commit %s tree %s\n", st.ChainLength, st.ChainHead, st.ContractHash, st.Source.Commit, st.Source.Tree)
		for _, b := range st.Blobs {
			fmt.Fprintf(w, "evidence %s ok\n", b)
		}
	}
}

func listCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest last, each reconciled",
		Long: `List the runs in the state directory, oldest first, each with its state as
reconciled from its event log (without the freshness check 'status' does, so
a run whose code changed since is not shown STALE here). A run that does not
reconcile is listed as REFUSED with the reason, and the exit code is then 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, refused, err := app.List(g.state)
			if err != nil {
				return err
			}
			switch {
			case asJSON:
				if err := writeJSON(g.stdout, rows); err != nil {
					return err
				}
			case len(rows) == 0:
				printNoRuns(g.stdout, g.state)
			}
			for _, r := range rows {
				switch {
				case asJSON:
				case r.Error != "":
					fmt.Fprintf(g.stdout, "%s  REFUSED  %s\n", esc(r.RunID), esc(r.Error))
				case r.Archived:
					fmt.Fprintf(g.stdout, "%s  %s  (archived)\n", r.RunID, r.State)
				default:
					fmt.Fprintf(g.stdout, "%s  %s\n", r.RunID, r.State)
				}
			}
			if refused {
				return silent(exit.Refused)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func approveCmd(g *globals) *cobra.Command {
	var actor, reason string
	var reject, asJSON bool
	c := &cobra.Command{
		Use:   "approve RUN --actor NAME [--reject --reason TEXT]",
		Short: "Record a human decision on a run awaiting approval",
		Long: `Record an approval (or with --reject, a rejection) by --actor. Refused
(exit 1) unless the run is AWAITING_APPROVAL and reconciles: the chain
verifies, the verification digest recomputed from run.json matches the log,
and neither the code nor the contract changed since planning (then the run
moves to STALE). When the approvals reach approval.required the run is
COMPLETE (with authorization: {required: true}, once a target is also
authorized: see 'proofgate authorize'). Repeating a decision that is already the run's outcome (the same
actor approving a COMPLETE run, or rejecting a REJECTED one, for example
after a crash) records nothing and exits 0.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := openDecision(g, args[0], actor, reason, reject)
			if err != nil {
				return err
			}
			defer d.close()
			r := d.r
			err = r.Decide(d.ctx, run.DecisionOptions{Actor: actor, Reject: reject, Reason: reason, Fresh: d.fresh})
			var done *run.DecidedError
			if err != nil && !errors.As(err, &done) {
				return classify(approveHint(err, r.ID))
			}
			rep := r.Report()
			if asJSON {
				return writeJSON(g.stdout, rep)
			}
			if done != nil {
				fmt.Fprintf(g.stdout, "run %s: %s (%s)\n", rep.RunID, rep.State, done)
				return nil
			}
			fmt.Fprintf(g.stdout, "run %s: %s\n", rep.RunID, rep.State)
			printAuthorizationHint(g.stdout, r, rep)
			return nil
		},
	}
	c.Flags().StringVar(&actor, "actor", "", "who decides (required)")
	c.Flags().BoolVar(&reject, "reject", false, "reject instead of approve")
	c.Flags().StringVar(&reason, "reason", "", "why (required with --reject)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func cancelCmd(g *globals) *cobra.Command {
	var actor, reason string
	c := &cobra.Command{
		Use:   "cancel RUN --actor NAME --reason TEXT",
		Short: "Cancel a run that has not ended",
		Long: `Move RUN to CANCELLED, recording --actor and --reason. Refused (exit 1) for
a run that already ended (COMPLETE, REJECTED, CANCELLED, SUPERSEDED) and
while another process holds the run's writer lock.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if actor == "" {
				return usageErr(errors.New("--actor is required"))
			}
			if reason == "" {
				return usageErr(errors.New("--reason is required"))
			}
			if err := checkNames(actor, reason); err != nil {
				return err
			}
			r, err := run.Open(g.state, args[0])
			if err != nil {
				return classify(err)
			}
			defer r.Close()
			if err := r.Cancel(actor, reason); err != nil {
				return classify(err)
			}
			fmt.Fprintf(g.stdout, "run %s: %s\n", r.ID, r.State())
			return nil
		},
	}
	c.Flags().StringVar(&actor, "actor", "", "who cancels (required)")
	c.Flags().StringVar(&reason, "reason", "", "why (required)")
	return c
}

func retryCmd(g *globals) *cobra.Command {
	var pf planFlags
	var ef execFlags
	var actor string
	c := &cobra.Command{
		Use:   "retry RUN",
		Short: "Start a new run that supersedes a BLOCKED, STALE or interrupted one",
		Long: `Plan and execute a new run from the current code and contract, and mark RUN
SUPERSEDED by it. RUN must be BLOCKED, STALE, or VERIFYING with its writer
gone (unlock it first with 'proofgate events unlock'). A retry that was
killed is finished by running it again: a new run it planned but never
executed is executed, one it named but never created is planned.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			if actor != "" {
				if err := checkNames(actor, ""); err != nil {
					return err
				}
			}
			c, err := pf.load(g)
			if err != nil {
				return err
			}
			p, err := connect(ctx, c, ef.progress(g))
			if err != nil {
				return err
			}
			defer p.Close()
			opts, err := pf.options(ctx, g, c)
			if err != nil {
				return err
			}
			r, err := run.Retry(ctx, run.RetryOptions{ID: args[0], Actor: actor, Plan: opts})
			if err != nil {
				return classify(err)
			}
			defer r.Close()
			if !ef.quiet {
				fmt.Fprintf(g.stderr, "run %s supersedes %s\n", r.ID, r.Planned.Supersedes)
			}
			return ef.executeWith(ctx, g, r, p)
		},
	}
	pf.register(c)
	ef.register(c)
	c.Flags().StringVar(&actor, "actor", "", "who retries (recorded)")
	return c
}

func eventsVerifyCmd(g *globals) *cobra.Command {
	var asJSON bool
	var cpFile, trustFile string
	var sf stateFlags
	c := &cobra.Command{
		Use:   "verify (RUN | --all [--repo-id ID])",
		Short: "Verify a run's hash-chained event log",
		Long: `Verify every line of the run's events.ndjson: canonical form, hash, link to
the previous line, sequence, and binding to the run, source and contract.
A refusal names the line and a typed reason: broken-link, seq-gap,
foreign-binding, unchained-after-chained, malformed, torn-tail. A log sealed
into segments (events.00000001.ndjson, ... then the active events.ndjson) is
read whole, in order; a refusal then names the file too, and a missing,
reordered or damaged segment is segment-gap, segment-order or segment-torn.
With --checkpoint and --trust, also check the log against a signed
checkpoint (entries rewritten or removed after it was exported).

This proves the chain, not the history: a log forged and re-chained from
line 1, or cut back after any line, passes. 'proofgate status RUN --audit' replays
the log against the contract and run.json; a signed checkpoint (--checkpoint)
detects rewriting and truncation before it. The output says which of these
were proved ("proved", "not_proved" in --json).

With --all (no RUN), verify every run's chain in the state directory, and
with --checkpoint and --trust a state checkpoint ("events checkpoint --all"):
the same repository (root commit and --repo-id), every run it lists present
(checkpoint-run-missing), holding the signed head at the signed length
(checkpoint-truncated, checkpoint-rewritten), its chain verifying
(checkpoint-chain-refused); another repository's state directory is
checkpoint-foreign-repository. Runs planned after it are listed as
"uncovered".`,
		Args: func(cmd *cobra.Command, args []string) error {
			if sf.all {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if sf.all {
				return stateVerify(cmd, g, &sf, cpFile, trustFile, asJSON)
			}
			if sf.repoID != "" {
				return usageErr(errors.New("--repo-id goes with --all"))
			}
			store := run.NewStore(g.state)
			id, err := store.Resolve(args[0])
			if err != nil {
				return classify(err)
			}
			res := verifyEvents(store.Path(id), id, cpFile, trustFile)
			if err := g.printEvents(res, asJSON); err != nil {
				return err
			}
			if res.usage != nil {
				return usageErr(res.usage)
			}
			if !res.OK {
				return silent(exit.Refused)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().StringVar(&cpFile, "checkpoint", "", "signed checkpoint file to check the log against")
	c.Flags().StringVar(&trustFile, "trust", "", "trust store for --checkpoint")
	sf.register(c, "verify")
	return c
}

// printEvents reports an events verify result: JSON, or a line saying ok
// (with what was proved) or refused (with file, line and reason).
func (g *globals) printEvents(res eventsResult, asJSON bool) error {
	switch {
	case asJSON:
		return writeJSON(g.stdout, res)
	case res.OK:
		fmt.Fprintf(g.stdout, "ok: %d events, head %s\nproved: %s\nnot proved: %s\n", res.Length, res.Head,
			strings.Join(res.Proved, ", "), res.NotProved)
		if res.Checkpoint != nil {
			printCheckpointCover(g.stdout, res.Checkpoint, res.Length)
		}
	case res.usage != nil:
	case res.File != "":
		fmt.Fprintf(g.stdout, "refused: %s line %d: %s: %s\n", res.File, res.Line, res.Reason, res.Detail)
	case res.Line > 0:
		fmt.Fprintf(g.stdout, "refused: line %d: %s: %s\n", res.Line, res.Reason, res.Detail)
	default:
		fmt.Fprintf(g.stdout, "refused: %s: %s\n", res.Reason, res.Detail)
	}
	return nil
}

type eventsResult struct {
	OK     bool   `json:"ok"`
	RunID  string `json:"run_id"`
	Length int    `json:"length,omitempty"`
	Head   string `json:"head,omitempty"`
	Reason string `json:"reason,omitempty"`
	// File is the log file the refused line is in (a sealed segment
	// events.NNNNNNNN.ndjson or the active events.ndjson); Line counts
	// in it.
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Proved names what an ok result established; NotProved says what it
	// did not, and which command does.
	Proved    []string `json:"proved,omitempty"`
	NotProved string   `json:"not_proved,omitempty"`
	// Checkpoint is what a verified --checkpoint covered (checkpoint.go).
	Checkpoint *checkpointCover `json:"checkpoint,omitempty"`
	usage      error
}

// What events verify proves: the chain, never the history it chains.
var (
	provedChain      = []string{"chain (every line canonical, linked to the one before, seq without gaps)", "binding (one run, contract and source on every line)"}
	provedCheckpoint = "checkpoint (the first %d events are the ones the signed checkpoint names: none rewritten or removed)"
	notProvedChain   = "a history forged and re-chained from line 1, or a log cut back after any line, passes a chain check; 'proofgate status RUN --audit' replays the log against the contract and run.json, and '--checkpoint FILE --trust trust.json' detects rewriting or truncation before a signed checkpoint"
	notProvedAfterCp = "events after the checkpoint are proved by the chain only (a later checkpoint covers them); 'proofgate status RUN --audit' replays the log against the contract"
)

func verifyEvents(dir, id, cpFile, trustFile string) eventsResult {
	res := eventsResult{RunID: id}
	if (cpFile == "") != (trustFile == "") {
		res.usage = errors.New("--checkpoint and --trust go together")
		return res
	}
	var events []eventlog.Event
	var sum eventlog.Summary
	var err error
	if cpFile != "" {
		events, err = run.ReadLog(dir)
		sum.Len = len(events)
		if len(events) > 0 {
			sum.Head = events[len(events)-1].Hash
		}
	} else {
		sum, err = run.VerifyLog(dir)
	}
	if err != nil {
		var ce *eventlog.ChainError
		var re *retention.Error
		if errors.As(err, &ce) {
			res.Reason, res.File, res.Line, res.Detail = string(ce.Reason), ce.File, ce.Line, ce.Detail
		} else if errors.As(err, &re) {
			res.Reason, res.Detail = string(re.Reason), re.Detail
		} else {
			res.Reason, res.Detail = "unreadable", err.Error()
		}
		return res
	}
	res.OK, res.Length, res.Head = true, sum.Len, sum.Head
	res.Proved, res.NotProved = provedChain, notProvedChain
	if cpFile != "" {
		cover, reason, detail, uerr := verifyCheckpoint(cpFile, trustFile, events)
		switch {
		case uerr != nil:
			res.OK, res.usage, res.Reason, res.Detail = false, uerr, "unusable-input", uerr.Error()
		case reason != "":
			res.OK, res.Reason, res.Detail = false, reason, detail
		default:
			res.Proved = append(slices.Clone(provedChain), fmt.Sprintf(provedCheckpoint, cover.Length))
			res.Checkpoint = cover
			res.NotProved = notProvedAfterCp
		}
	}
	if !res.OK {
		res.Proved, res.NotProved = nil, ""
	}
	return res
}

func eventsUnlockCmd(g *globals) *cobra.Command {
	var actor string
	var olderThan time.Duration
	c := &cobra.Command{
		Use:   "unlock RUN --actor NAME --older-than DUR",
		Short: "Remove a dead writer's lock from a run",
		Long: `Remove the run's writer lock only when its owner is provably dead (its pid
is gone, or was reused by a process with another start time) on this host,
and the lock is older than --older-than. Live, young, foreign-host and
unreadable locks stay. Every check process group (and cgroup) that the dead
writer recorded is killed first — never a reused pid: the group leader's
start time must match. The removal and those processes are recorded as
lock.broken with --actor.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if actor == "" {
				return usageErr(errors.New("--actor is required"))
			}
			if err := checkNames(actor, ""); err != nil {
				return err
			}
			if !cmd.Flags().Changed("older-than") {
				return usageErr(errors.New("--older-than is required (e.g. 10m)"))
			}
			u, err := run.Unlock(g.state, args[0], actor, olderThan, time.Now())
			var refused *lock.BreakRefused
			switch {
			case errors.Is(err, run.ErrNoLock), errors.As(err, &refused):
				return refusedErr(err)
			case u.Owner.PID == 0 && err != nil:
				return classify(err)
			}
			fmt.Fprintf(g.stdout, "unlocked run %s (writer pid %d on %s is dead)\n", u.ID, u.Owner.PID, esc(u.Owner.Host))
			printProcesses(g.stdout, u.Processes)
			if err != nil {
				return classify(err)
			}
			return nil
		},
	}
	c.Flags().StringVar(&actor, "actor", "", "who unlocks (required, recorded)")
	c.Flags().DurationVar(&olderThan, "older-than", 0, "only remove a lock older than this (required)")
	return c
}

func outputCmd(g *globals) *cobra.Command {
	var stream string
	var asJSON bool
	c := &cobra.Command{
		Use:   "output RUN CHECK [--stream stdout|stderr]",
		Short: "Print a check's captured output, verified against its recorded digest",
		Long: `Print what a check wrote in RUN, after checking each evidence blob against
the digest the event log recorded: by default its stderr then its stdout, each
under a line "--- stderr of check CHECK (N bytes) ---" (or "... : empty ---"
for a stream it did not write to); with --stream stdout or --stream stderr that
one stream alone, byte for byte, for scripts. CHECK is a check id from
'proofgate status RUN'. With --json, one document for stdout (or the --stream
named): run_id, check, stream, digest, size, truncated, encoding ("utf-8", or
"base64" when the bytes are not valid UTF-8) and content; without --stream it
also holds "stderr", the same members for the stderr stream.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if stream != "" && stream != "stdout" && stream != "stderr" {
				return usageErr(fmt.Errorf("--stream must be stdout or stderr, not %q", stream))
			}
			o, err := app.OpenOutput(g.state, args[0], args[1])
			if err != nil {
				return classify(err)
			}
			defer o.Close()
			switch {
			case asJSON:
				return outputJSON(g.stdout, o, stream)
			case stream == "":
				return printStreams(g.stdout, o)
			}
			s, err := o.Stream(stream)
			if err != nil {
				return classify(err)
			}
			return o.Copy(g.stdout, s)
		},
	}
	c.Flags().StringVar(&stream, "stream", "", "print only this stream, byte for byte: stdout or stderr (default both, labelled)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON: the stream's digest, size and content (UTF-8 text, else base64)")
	return c
}

// printStreams prints the check's stderr then its stdout, each under a
// line naming it, or a line saying it is empty.
func printStreams(w io.Writer, o *app.Output) error {
	for _, name := range []string{"stderr", "stdout"} {
		s, _ := o.Stream(name)
		if s == nil || s.Size == 0 {
			fmt.Fprintf(w, "--- %s of check %s: empty ---\n", name, esc(o.Check.ID))
			continue
		}
		note := ""
		if s.Truncated {
			note = ", truncated at the output limit"
		}
		fmt.Fprintf(w, "--- %s of check %s (%d bytes%s) ---\n", name, esc(o.Check.ID), s.Size, note)
		tw := &tailWatcher{w: w}
		if err := o.Copy(tw, s); err != nil {
			return err
		}
		if tw.last != '\n' {
			fmt.Fprintln(w)
		}
	}
	return nil
}

// tailWatcher remembers the last byte written through it.
type tailWatcher struct {
	w    io.Writer
	last byte
}

func (t *tailWatcher) Write(p []byte) (int, error) {
	if len(p) > 0 {
		t.last = p[len(p)-1]
	}
	return t.w.Write(p)
}

// printProcesses says what became of the process records of a dead harness.
func printProcesses(w io.Writer, ks []lock.Killed) {
	for _, k := range ks {
		what := fmt.Sprintf("process group %d", k.PGID)
		if k.PGID == 0 {
			what = "processes"
		}
		if k.Cgroup != "" {
			what += " (cgroup " + esc(k.Cgroup) + ")"
		}
		check := esc(k.Check)
		switch k.Result {
		case lock.ResultKilled:
			fmt.Fprintf(w, "killed %s of check %s\n", what, check)
		case lock.ResultPidReused:
			fmt.Fprintf(w, "not signalled: %s of check %s (its pid now runs another process)\n", what, check)
		default:
			fmt.Fprintf(w, "%s of check %s: %s\n", what, check, esc(string(k.Result)))
		}
	}
}
