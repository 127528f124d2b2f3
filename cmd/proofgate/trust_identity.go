package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/spf13/cobra"
)

// Keyless signing identities in the trust store (ADR 0010): trust
// add-identity, and trust retire/revoke --identity-id.

func trustAddIdentityCmd(g *globals, storePath *string) *cobra.Command {
	var id trust.Identity
	var notBefore, notAfter string
	c := &cobra.Command{
		Use:   "add-identity --store trust.json --id NAME --signer-workflow OWNER/REPO/.github/workflows/F.yml[@REF] [--certificate-oidc-issuer I] [--source-repo R] [--source-ref REF] [--not-before T] [--not-after T]",
		Short: "Add an active keyless signing identity",
		Long: `Add an identity policy that keyless bundles' certificates may match
(bundle verify --trusted-root): the signing workflow (without @REF any ref of
it, with @REF exactly that one), optionally the OIDC issuer (default the
GitHub Actions issuer), the source repository and ref. --not-before and
--not-after bound the witnessed times it is valid for; retire and revoke
take --identity-id. The store is rewritten atomically.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if id.ID == "" || id.SignerWorkflow == "" {
				return usageErr(errors.New("--id and --signer-workflow are required"))
			}
			var err error
			if id.NotBefore, err = optTime("not-before", notBefore); err != nil {
				return err
			}
			if id.NotAfter, err = optTime("not-after", notAfter); err != nil {
				return err
			}
			if err := g.checkOutput("--store", *storePath); err != nil {
				return err
			}
			s, err := trust.LoadOrNew(*storePath)
			if err != nil {
				return usageErr(err)
			}
			if err := s.AddIdentity(id); err != nil {
				return usageErr(err)
			}
			if err := s.Save(*storePath); err != nil {
				return envErr(err)
			}
			fmt.Fprintln(g.stdout, printable.Escape(id.ID))
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&id.ID, "id", "", "a unique label for the identity")
	fl.StringVar(&id.SignerWorkflow, "signer-workflow", "", "the signing workflow, OWNER/REPO/.github/workflows/FILE[@REF]")
	fl.StringVar(&id.Issuer, "certificate-oidc-issuer", "", "the OIDC issuer (default the GitHub Actions issuer)")
	fl.StringVar(&id.SourceRepo, "source-repo", "", "the source repository, OWNER/REPO")
	fl.StringVar(&id.SourceRef, "source-ref", "", "the source ref, e.g. refs/heads/main")
	fl.StringVar(&notBefore, "not-before", "", "earliest witnessed time accepted (RFC 3339)")
	fl.StringVar(&notAfter, "not-after", "", "latest witnessed time accepted (RFC 3339)")
	return c
}

// registerIdentityID adds --identity-id to trust retire or revoke.
func registerIdentityID(c *cobra.Command, id *string) {
	c.Flags().StringVar(id, "identity-id", "", "keyless identity id (instead of --key-id)")
}

// changeIdentity retires (at, default now) or revokes (at, default
// always) identity id in the store at storePath. It refuses --key-id or
// --public-key beside --identity-id.
func changeIdentity(g *globals, storePath, verb, id, keyID, keyFile, at string) error {
	if keyID != "" || keyFile != "" {
		return usageErr(errors.New("give one of --key-id, --public-key and --identity-id"))
	}
	s, err := trust.Load(storePath)
	if err != nil {
		return usageErr(err)
	}
	if err := change(verb, at, func(t time.Time) error { return s.RetireIdentity(id, t) },
		func(t *time.Time) error { return s.RevokeIdentity(id, t) }); err != nil {
		return err
	}
	if err := s.Save(storePath); err != nil {
		return envErr(err)
	}
	fmt.Fprintf(g.stdout, "identity %s %sd\n", printable.Escape(id), verb)
	return nil
}

// printIdentities lists the store's identities after its keys.
func printIdentities(w io.Writer, s *trust.Store) {
	for _, i := range s.Identities {
		fmt.Fprintf(w, "identity %s %-7s signer_workflow=%s issuer=%s source_repo=%s source_ref=%s not_before=%s not_after=%s retired_at=%s revoked_at=%s\n",
			esc(i.ID), esc(string(i.Status)), esc(orDash(i.SignerWorkflow)), esc(orDash(i.Issuer)), esc(orDash(i.SourceRepo)),
			esc(orDash(i.SourceRef)), fmtTime(i.NotBefore), fmtTime(i.NotAfter), fmtTime(i.RetiredAt), fmtIdentityRevoked(&i))
	}
}

func fmtIdentityRevoked(i *trust.Identity) string {
	if i.Status == trust.Revoked && i.RevokedAt == nil {
		return "always"
	}
	return fmtTime(i.RevokedAt)
}
