package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/docbridge"
	"github.com/proofgate/proofgate/internal/provider"
	"github.com/proofgate/proofgate/internal/run"
)

func contextCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "context",
		Short: "Resolve context snapshots from a context provider",
		Long: `Resolve a query through a context provider into a context file that
'proofgate plan --context-file' and 'proofgate run --context-file' accept.

Providers return references only: the kernel names the provider, bounds what
it returns, computes the snapshot hash and records the snapshot when a run is
planned with it. A provider cannot approve a run or change how its evidence
is checked.`,
	}
	c.AddCommand(contextResolveCmd(g))
	return c
}

// contextOutput is `context resolve --json`.
type contextOutput struct {
	File         string `json:"file"`
	Provider     string `json:"provider"`
	Query        string `json:"query"`
	SnapshotHash string `json:"snapshot_hash"`
	ContentHash  string `json:"content_hash"`
	References   int    `json:"references"`
	Matches      int    `json:"matches"`
	// ResolvedAt is when this resolution ran; it is not in the snapshot
	// (whose hash stays the same for the same query and index).
	ResolvedAt string `json:"resolved_at"`
}

func contextResolveCmd(g *globals) *cobra.Command {
	var (
		prov, query, out, index string
		force, asJSON           bool
	)
	c := &cobra.Command{
		Use:   "resolve --provider doc-bridge --query Q -o FILE",
		Short: "Resolve a query into a verified context snapshot file",
		Long: `Resolve a query into a verified context snapshot file.

The one built-in provider, doc-bridge, reads the repository's
.doc-bridge/index.json (or --index FILE): its contentHash is recomputed, and
a missing, malformed, oversized or tampered index is refused (exit 2) with the
reason. Every query term (letters and digits) must occur in an entry's title,
path or text; at most eight references are kept, highest score first, then by
id, so the same query against the same index always writes the same bytes.
An existing FILE is never replaced without --force.

Examples:
    proofgate context resolve --provider doc-bridge --query "cache health endpoint" -o ctx.json
    proofgate run --context-file ctx.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if prov != docbridge.Name {
				return usageErr(fmt.Errorf("--provider %q: unknown provider (known: %s)", prov, docbridge.Name))
			}
			if out == "" {
				return usageErr(errors.New("-o FILE is required"))
			}
			if err := g.checkOutput("-o", out); err != nil {
				return err
			}
			res, err := resolveContext(index, query, out, force)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, res)
			}
			fmt.Fprintf(g.stdout, "wrote %s: %d of %d matching references, snapshot %s (index %s)\n", out, res.References, res.Matches, res.SnapshotHash, res.ContentHash)
			return nil
		},
	}
	c.Flags().StringVar(&prov, "provider", docbridge.Name, "the context provider")
	c.Flags().StringVar(&query, "query", "", "what to look up (required)")
	c.Flags().StringVarP(&out, "output", "o", "", "the context file to write (required)")
	c.Flags().StringVar(&index, "index", "", "the doc-bridge index (default: <repository>/"+docbridge.DefaultIndex+")")
	c.Flags().BoolVar(&force, "force", false, "replace an existing output file")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func resolveContext(index, query, out string, force bool) (*contextOutput, error) {
	ctx, cancel := signalContext()
	defer cancel()
	source := index
	if index == "" {
		repo, err := repoDir(ctx)
		if err != nil {
			return nil, err
		}
		index, source = filepath.Join(repo, docbridge.DefaultIndex), docbridge.DefaultIndex
	}
	if !force {
		if _, err := os.Lstat(out); err == nil {
			return nil, outputErr(fmt.Errorf("-o %s: %w", out, os.ErrExist))
		}
	}
	ix, err := docbridge.Load(index, filepath.ToSlash(source))
	if err != nil {
		return nil, usageErr(err)
	}
	snap, b, err := provider.Resolve(ctx, docbridge.Name, ix, query)
	if err != nil {
		return nil, usageErr(err)
	}
	// The file written is what --context-file reads: check it the same way.
	if _, err := run.ParseContext(out, b); err != nil {
		return nil, refusedErr(fmt.Errorf("the resolved snapshot does not verify: %w", err))
	}
	b = append(b, '\n')
	if err := writeOutput(out, b, force); err != nil {
		return nil, outputErr(fmt.Errorf("-o %s: %w", out, err))
	}
	return &contextOutput{
		File: out, Provider: docbridge.Name, Query: query, SnapshotHash: snap.Hash,
		ContentHash: snap.Provenance.ContentHash, References: len(snap.References),
		Matches: snap.Provenance.Matches, ResolvedAt: time.Now().UTC().Format(time.RFC3339),
	}, nil
}
