package main

import (
	"errors"
	"fmt"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/spf13/cobra"
)

// agentSessionCmd is `bundle agent-session`: the agent workflow's signed
// evidence that a commit was produced under recorded agent sessions
// (ADR 0021, docs/SPEC.md "Agent-session evidence").
func agentSessionCmd(g *globals) *cobra.Command {
	var keyRef, out string
	var force bool
	var kx keylessExportFlags
	c := &cobra.Command{
		Use:   "agent-session RUN (--key key.pem | --keyless [--id-token-file F]) [-o FILE] [--force]",
		Short: "Export signed evidence that RUN's commit came from a recorded agent session",
		Long: `RUN is the successor run planned with --implemented-by A on the commit the
agent left (any state: it need not have run its checks). The archive holds
RUN's files, A's files under implementation/A/ and attestation.dsse.json, a
DSSE envelope over an in-toto Statement with predicate type
` + bundle.AgentSessionPredicateType + `.

Upload it as artifact proofgate-agent-session-<commit>: the ProofGate action
of a pull request whose head is that commit verifies it (the job's key, or
keyless: the workflow the base branch's contract pins in
approval.agent_sessions.workflow, at the base branch's ref) and only then sets an
approval rule's from_agent_session. FILE defaults to RUN` + bundle.AgentSessionSuffix + `;
an existing FILE is refused unless --force.

Example:
  proofgate bundle agent-session "$B" --keyless -o agent.agent-session.tar.gz`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, ms, err := kx.signers(cmd.Flags().Changed, keyRef)
			if err != nil {
				return err
			}
			store := run.NewStore(g.state)
			id, err := store.Resolve(args[0])
			if err != nil {
				return classify(err)
			}
			if out == "" {
				out = id + bundle.AgentSessionSuffix
			}
			if err := g.checkOutput("-o", out); err != nil {
				return err
			}
			err = app.ExportAgentSession(cmd.Context(), app.AgentSessionOptions{Run: id, Opener: runOpener(g.state), Out: out, Replace: force, Key: s, Keyless: ms})
			var re *app.ReplaceError
			var ee *bundle.ExportError
			switch {
			case errors.As(err, &re):
				return envErr(re.Err)
			case errors.As(err, &ee):
				return exit.Wrap(exit.Refused, err)
			case err != nil:
				return outputErr(err)
			}
			fmt.Fprintf(g.stdout, "%s\n", out)
			return nil
		},
	}
	c.Flags().StringVar(&keyRef, "key", "", "private key: PKCS#8 PEM file or env:VAR")
	c.Flags().StringVarP(&out, "output", "o", "", "archive file (default <run-id>"+bundle.AgentSessionSuffix+")")
	c.Flags().BoolVar(&force, "force", false, "replace an existing output file")
	kx.register(c)
	return c
}
