package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/spf13/cobra"
)

func trustCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "trust", Short: "Manage the trust store of bundle signing keys"}
	var storePath string
	c.PersistentFlags().StringVar(&storePath, "store", "trust.json", "trust store file")
	retire := trustChangeCmd(g, &storePath, "retire")
	retire.Short = "Retire a key: bundles signed up to --at (default now) still verify"
	revoke := trustChangeCmd(g, &storePath, "revoke")
	revoke.Short = "Revoke a key: bundles signed at or after --at, or all without --at, are refused"
	c.AddCommand(trustAddCmd(g, &storePath), trustAddIdentityCmd(g, &storePath), retire, revoke, trustListCmd(g, &storePath))
	return c
}

func trustAddCmd(g *globals, storePath *string) *cobra.Command {
	var pubFile, identity, notBefore, notAfter string
	add := &cobra.Command{
		Use:   "add --store trust.json --public-key key.pub.pem [--identity S] [--not-before T] [--not-after T]",
		Short: "Add an active key and print its id",
		Long: `Add a public key as active. --identity (e.g. repo:owner/name) makes the key
valid only for bundles of that repository; --not-before/--not-after bound the
signing times it is valid for. The store is rewritten atomically.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if pubFile == "" {
				return usageErr(errors.New("--public-key is required"))
			}
			if identity != "" {
				if err := checkKeyIdentity(identity); err != nil {
					return err
				}
			}
			nb, err := optTime("not-before", notBefore)
			if err != nil {
				return err
			}
			na, err := optTime("not-after", notAfter)
			if err != nil {
				return err
			}
			if err := g.checkOutput("--store", *storePath); err != nil {
				return err
			}
			s, err := trust.LoadOrNew(*storePath)
			if err != nil {
				return usageErr(err)
			}
			_, pemBytes, err := key.LoadPublic(pubFile)
			if err != nil {
				return usageErr(err)
			}
			id, err := s.Add(pemBytes, identity, nb, na)
			if err != nil {
				return usageErr(err)
			}
			if err := s.Save(*storePath); err != nil {
				return envErr(err)
			}
			fmt.Fprintln(g.stdout, id)
			return nil
		},
	}
	add.Flags().StringVar(&pubFile, "public-key", "", "public key PEM file")
	add.Flags().StringVar(&identity, "identity", "", "identity the key may sign for, e.g. repo:owner/name")
	add.Flags().StringVar(&notBefore, "not-before", "", "earliest signing time accepted (RFC 3339)")
	add.Flags().StringVar(&notAfter, "not-after", "", "latest signing time accepted (RFC 3339)")
	return add
}

// trustChangeCmd is "trust retire" or "trust revoke" (verb).
func trustChangeCmd(g *globals, storePath *string, verb string) *cobra.Command {
	var keyID, keyFile, identityID, at string
	c := &cobra.Command{
		Use:  verb + " --store trust.json (--key-id ID | --identity-id NAME) [--at T]",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if identityID != "" {
				return changeIdentity(g, *storePath, verb, identityID, keyID, keyFile, at)
			}
			id, err := keyIDFlag(keyID, keyFile)
			if err != nil {
				return err
			}
			s, err := trust.Load(*storePath)
			if err != nil {
				return usageErr(err)
			}
			if err := changeKey(s, verb, id, at); err != nil {
				return err
			}
			if err := s.Save(*storePath); err != nil {
				return envErr(err)
			}
			fmt.Fprintf(g.stdout, "%s %sd\n", id, verb)
			return nil
		},
	}
	c.Flags().StringVar(&keyID, "key-id", "", "key id")
	c.Flags().StringVar(&keyFile, "public-key", "", "public key PEM file (instead of --key-id)")
	registerIdentityID(c, &identityID)
	if verb == "retire" {
		c.Flags().StringVar(&at, "at", "", "retirement time (RFC 3339, default now)")
	} else {
		c.Flags().StringVar(&at, "at", "", "revocation time (RFC 3339); without it every signature is refused")
	}
	return c
}

// keyIDFlag returns the key id that exactly one of --key-id and
// --public-key names.
func keyIDFlag(keyID, keyFile string) (string, error) {
	if (keyID == "") == (keyFile == "") {
		return "", usageErr(errors.New("give exactly one of --key-id and --public-key"))
	}
	if keyFile == "" {
		return keyID, nil
	}
	pub, _, err := key.LoadPublic(keyFile)
	if err != nil {
		return "", usageErr(err)
	}
	id, err := key.ID(pub)
	if err != nil {
		return "", usageErr(err)
	}
	return id, nil
}

// changeKey retires (at, default now) or revokes (at, default always) key
// id in s.
func changeKey(s *trust.Store, verb, id, at string) error {
	return change(verb, at, func(t time.Time) error { return s.Retire(id, t) },
		func(t *time.Time) error { return s.Revoke(id, t) })
}

// change is "retire" (at, default now) or "revoke" (at, default always)
// of one trust store entry.
func change(verb, at string, retire func(time.Time) error, revoke func(*time.Time) error) error {
	var err error
	switch verb {
	case "retire":
		when := time.Now().UTC()
		if at != "" {
			if when, err = parseTime("at", at); err != nil {
				return err
			}
		}
		err = retire(when)
	case "revoke":
		var when *time.Time
		if when, err = optTime("at", at); err != nil {
			return err
		}
		err = revoke(when)
	}
	if err != nil {
		return usageErr(err)
	}
	return nil
}

func trustListCmd(g *globals, storePath *string) *cobra.Command {
	var asJSON bool
	list := &cobra.Command{
		Use:   "list --store trust.json [--json]",
		Short: "List the keys of the trust store",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := trust.Load(*storePath)
			if err != nil {
				return usageErr(err)
			}
			if asJSON {
				return writeJSON(g.stdout, s)
			}
			for _, k := range s.Keys {
				fmt.Fprintf(g.stdout, "%s %-7s identity=%s not_before=%s not_after=%s retired_at=%s revoked_at=%s\n",
					k.ID, esc(string(k.Status)), esc(orDash(k.Identity)), fmtTime(k.NotBefore), fmtTime(k.NotAfter), fmtTime(k.RetiredAt), fmtRevoked(&k))
			}
			printIdentities(g.stdout, s)
			return nil
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return list
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func fmtRevoked(k *trust.Key) string {
	if k.Status == trust.Revoked && k.RevokedAt == nil {
		return "always"
	}
	return fmtTime(k.RevokedAt)
}
