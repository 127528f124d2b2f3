package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/kernel/exit"
)

// sessionDoc is what 'session start|resume|end --json' prints.
type sessionDoc struct {
	RunID     string   `json:"run_id"`
	Session   string   `json:"session"`
	Agent     string   `json:"agent,omitempty"`
	Open      bool     `json:"open"`
	Ambiguous []string `json:"ambiguous"`
	// Stopped is what resume found the dead recorder's calls left
	// running, and what became of it (omitted when none).
	Stopped []session.Stopped `json:"stopped,omitempty"`
}

func sessionCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "session",
		Short: "Start, resume or end an agent session on an IMPLEMENTING run",
		Long: `An agent session records an agent's tool calls in the run's event log
(session.started … session.ended). 'proofgate mcp' starts and ends its own;
these verbs serve shell-based agents, and MCP clients that reconnect
('proofgate mcp RUN --session S' joins a session started here).

  RUN=$(proofgate plan --implement)
  S=$(proofgate session start "$RUN" --agent my-agent)
  proofgate tool exec "$RUN" greet --session "$S" --input args.json
  proofgate session end "$RUN" --session "$S"

One session is open on a run at a time. A session whose process died is
taken over only when its owner is provably dead (same host, pid gone);
actions it started and never finished are then ambiguous and block the
session until a human decides each ('proofgate tool retry|abandon').`,
	}
	c.AddCommand(sessionStartCmd(g), sessionResumeCmd(g), sessionEndCmd(g))
	return c
}

func sessionStartCmd(g *globals) *cobra.Command {
	var agent string
	var asJSON bool
	c := &cobra.Command{
		Use:   "start RUN [--agent ID] [--json]",
		Short: "Start a session and print its id",
		Long: `Start an agent session on RUN (IMPLEMENTING; a run id or "latest") and print
its id (s-<12 hex>) alone on stdout. The session stays open after this
command exits: pass --session to 'tool exec' and 'mcp', and end it with
'proofgate session end'. Exit 1 when the run is not IMPLEMENTING or
another live recorder owns an open session.

  S=$(proofgate session start latest --agent ci-agent)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkAgent(agent); err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			s, rts, err := openSession(ctx, g, app.SessionOptions{Run: args[0], Agent: agent})
			if err != nil {
				return err
			}
			defer rts.Close()
			if asJSON {
				return writeJSON(g.stdout, sessionDoc{RunID: s.Run(), Session: s.ID(), Agent: agent, Open: true, Ambiguous: []string{}})
			}
			fmt.Fprintln(g.stdout, s.ID())
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "agent", "agent identity recorded in session.started")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func sessionResumeCmd(g *globals) *cobra.Command {
	var sess string
	var asJSON bool
	c := &cobra.Command{
		Use:   "resume RUN --session S [--json]",
		Short: "Take over a session whose recorder died and list its ambiguous actions",
		Long: `Take over session S of RUN after its recorder died (recorded as
session.resumed). Refused (exit 1) while the recorded owner is alive, on
another host, or unknown. Actions that started and never finished are closed
as crashed and listed as ambiguous: each may have reached the outside world,
nothing is re-run automatically, and the session refuses new calls (exit 1
here) until a human decides each. What such a call left running (its
process group or cgroup, its container) is stopped first and reported
("stopped: ..."); retry is refused while anything of it still runs:

  proofgate session resume latest --session s-0123456789ab
  proofgate tool retry latest a-0123456789ab --actor alice     # may run again
  proofgate tool abandon latest a-0123456789ab --actor alice --reason "done by hand"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if sess == "" {
				return usageErr(errors.New("--session is required"))
			}
			ctx, cancel := signalContext()
			defer cancel()
			s, rts, err := openSession(ctx, g, app.SessionOptions{Run: args[0], Session: sess})
			if err != nil {
				return err
			}
			defer rts.Close()
			amb := s.Ambiguous
			if asJSON {
				if err := writeJSON(g.stdout, sessionDoc{RunID: s.Run(), Session: s.ID(), Open: true, Ambiguous: amb, Stopped: s.Stopped()}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(g.stdout, "session %s resumed on run %s\n", s.ID(), s.Run())
				for _, st := range s.Stopped() {
					fmt.Fprintf(g.stdout, "action %s: %s\n", st.Action, stoppedLine(st))
				}
				for _, a := range amb {
					fmt.Fprintf(g.stdout, "ambiguous: action %s started and never finished; decide: 'proofgate tool retry %s %s --actor NAME' or 'proofgate tool abandon %s %s --actor NAME --reason TEXT'\n", a, s.Run(), a, s.Run(), a)
				}
			}
			if len(amb) > 0 {
				return silent(exit.Refused)
			}
			return nil
		},
	}
	c.Flags().StringVar(&sess, "session", "", "the session to resume (required)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func sessionEndCmd(g *globals) *cobra.Command {
	var sess, reason string
	var asJSON bool
	c := &cobra.Command{
		Use:   "end RUN --session S [--reason TEXT] [--json]",
		Short: "End a session (session.ended)",
		Long: `End session S of RUN. Refused (exit 1) while one of its actions started and
never finished, or is ambiguous and undecided, and while another live
recorder owns it. After the last session ends the run can be verified:
'proofgate exec RUN'.

  proofgate session end latest --session s-0123456789ab --reason "work done"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if sess == "" {
				return usageErr(errors.New("--session is required"))
			}
			if err := printable.CheckText("--reason", reason); err != nil {
				return usageErr(err)
			}
			ctx, cancel := signalContext()
			defer cancel()
			s, rts, err := openSession(ctx, g, app.SessionOptions{Run: args[0], Session: sess})
			if err != nil {
				return err
			}
			defer rts.Close()
			if err := s.End(reason); err != nil {
				return classifySession(err)
			}
			if asJSON {
				return writeJSON(g.stdout, sessionDoc{RunID: s.Run(), Session: s.ID(), Open: false, Ambiguous: s.Ambiguous})
			}
			fmt.Fprintf(g.stdout, "session %s ended\nnext: proofgate exec %s (verify the run)\n", s.ID(), s.Run())
			return nil
		},
	}
	c.Flags().StringVar(&sess, "session", "", "the session to end (required)")
	c.Flags().StringVar(&reason, "reason", "", "why (recorded)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// openSession opens the session o names (o.State, o.RepoDir and
// o.Runtimes filled in here) with runtimes the caller closes.
func openSession(ctx context.Context, g *globals, o app.SessionOptions) (*app.AgentSession, *app.ToolRuntimes, error) {
	repo, err := repoDir(ctx)
	if err != nil {
		return nil, nil, err
	}
	o.State, o.RepoDir, o.Runtimes = g.state, repo, app.NewToolRuntimes(ctx)
	s, err := app.OpenSession(ctx, o)
	if err != nil {
		o.Runtimes.Close()
		return nil, nil, classifySession(err)
	}
	return s, o.Runtimes, nil
}

// stoppedLine says what resume did with one thing a dead recorder's call
// left running.
func stoppedLine(st session.Stopped) string {
	what := esc(st.What)
	switch {
	case st.Result == session.StopFailed:
		return fmt.Sprintf("NOT stopped: %s (%s) may still run (%s runtime); retry is refused while it does: stop it ('proofgate clean orphans'), or abandon the action", what, esc(st.Detail), st.Runtime)
	case st.Result == lock.ResultKilled:
		return fmt.Sprintf("stopped: %s was still running and was killed (%s runtime)", what, st.Runtime)
	case st.What == "nothing":
		return fmt.Sprintf("stopped: nothing of its call was running any more (%s runtime)", st.Runtime)
	}
	return fmt.Sprintf("%s: %s (%s runtime)", what, esc(st.Result), st.Runtime)
}
