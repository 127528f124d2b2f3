package action

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/kernel/exit"
)

// VSAKeyEnv is read when input vsa-key is empty.
const VSAKeyEnv = "PROOFGATE_VSA_KEY"

// ReasonVSA is the refusal of an accepted bundle whose verification
// summary could not be written: a gate asked for one fails closed.
const ReasonVSA = "vsa-unwritten"

// vsaGate is the verify step's verification summary: the gate's key (nil
// when signed keyless), the file to write, and the bundle it names.
type vsaGate struct {
	signer     vsa.Signer
	keyless    *signingInputs // vsa-signing: keyless, or nil
	path       string         // relative to the workspace
	verifierID string
	cand       *vsaCandidate
}

// errNoVSAToken is the usage error of a keyless summary without id-token: write.
var errNoVSAToken = errors.New("vsa-signing: keyless needs the job's OIDC token, but " + idTokenURLEnv + " and " + idTokenTokenEnv +
	" are unset: give the job `permissions: id-token: write`")

// vsaCandidate is a verified bundle as the summary names it.
type vsaCandidate struct {
	data      []byte
	name, uri string
	opts      bundle.VerifyOptions
	verdict   bundle.Verdict
}

// readVSAInputs reads inputs vsa-signing, vsa-key (or VSAKeyEnv),
// vsa-path and vsa-verifier-id; without a key, or vsa-signing: keyless, no
// summary is written.
func (g *gate) readVSAInputs() *refusal {
	f := g.f
	pemKey := f.input("vsa-key")
	if pemKey == "" {
		pemKey = strings.TrimSpace(g.o.Getenv(VSAKeyEnv))
	}
	f.mask(pemKey)
	path, id := f.input("vsa-path"), f.input("vsa-verifier-id")
	si, err := readSigningInput(f, "vsa-signing")
	if err != nil {
		return refuseUsage("%v", err)
	}
	if si.mode == SigningKeyless {
		return g.keylessVSAInputs(si, f.input("vsa-key"), path, id)
	}
	if pemKey == "" {
		if path != "" || id != "" {
			return refuseUsage("input vsa-path or vsa-verifier-id is set but vsa-key is empty: the summary needs the gate's signing key")
		}
		return nil
	}
	pk, err := key.ParsePrivate([]byte(pemKey), "input vsa-key")
	if err != nil {
		return refuseUsage("input vsa-key: %v", err)
	}
	s, err := key.NewSigner(pk)
	if err != nil {
		return refuseUsage("input vsa-key: %v", err)
	}
	if path == "" {
		path = "proofgate-" + g.in.commit + ".vsa.json"
	}
	if r := checkVSAPath(path, id); r != nil {
		return r
	}
	g.vsa = &vsaGate{signer: s, path: path, verifierID: id}
	return nil
}

// keylessVSAInputs reads the inputs of a summary signed keyless: no
// vsa-key, the job's OIDC token available.
func (g *gate) keylessVSAInputs(si signingInputs, pemKey, path, id string) *refusal {
	if pemKey != "" {
		return refuseUsage("input vsa-key is set with vsa-signing: keyless: a keyless summary is signed by an ephemeral key")
	}
	if g.o.Getenv(idTokenURLEnv) == "" || g.o.Getenv(idTokenTokenEnv) == "" {
		return refuseUsage("%v", errNoVSAToken)
	}
	if path == "" {
		path = "proofgate-" + g.in.commit + ".vsa.sigstore.json"
	}
	if r := checkVSAPath(path, id); r != nil {
		return r
	}
	g.vsa = &vsaGate{keyless: &si, path: path, verifierID: id}
	return nil
}

// checkVSAPath refuses a vsa-path that is not clean and relative, and a
// vsa-verifier-id that is not an absolute URI.
func checkVSAPath(path, id string) *refusal {
	if !event.CleanRel(path) {
		return refuseUsage("input vsa-path: %q is not a clean path relative to the workspace", path)
	}
	probe := vsa.Input{Name: "probe", Archive: &vsa.Archive{SHA256: strings.Repeat("0", 64)}, VerifierID: id, Verdict: bundle.Refusal("probe", "", "")}
	if _, err := vsa.New(probe); err != nil {
		return refuseUsage("input vsa-verifier-id: %v", err)
	}
	return nil
}

// noteVSA records a verified bundle for the summary: the accepted one, or
// else the first refused (whose refusal is the gate's).
func (g *gate) noteVSA(data []byte, name, uri string, opts bundle.VerifyOptions, att Attempt) {
	if g.vsa == nil || (g.vsa.cand != nil && g.vsa.cand.verdict.Verdict == VerdictAccepted) {
		return
	}
	v := bundle.Refusal(att.Reason, att.Detail, g.res.RunID)
	if att.Verdict == VerdictAccepted {
		v = g.res.Accepted.Verdict()
	} else if g.vsa.cand != nil {
		return
	}
	g.vsa.cand = &vsaCandidate{data: data, name: name, uri: uri, opts: opts, verdict: v}
}

// writeVSA writes the summary of the noted bundle and sets output vsa. No
// bundle was verified (none found, unusable input): no summary. It
// returns the refusal of an accepted bundle whose summary failed.
func (g *gate) writeVSA(ctx context.Context, accepted bool) *refusal {
	if g.vsa == nil || g.vsa.cand == nil {
		g.f.output("vsa", "")
		g.f.output("vsa-policy", "")
		return nil
	}
	err := g.vsa.write(ctx, g)
	if err == nil {
		g.f.output("vsa", g.vsa.path)
		g.f.output("vsa-policy", policyPath(g.vsa.path))
		g.f.logf("wrote verification summary %s (%s) and its policy document %s", g.vsa.path, passedOrFailed(g.vsa.cand.verdict), policyPath(g.vsa.path))
		return nil
	}
	g.f.output("vsa", "")
	g.f.output("vsa-policy", "")
	if !accepted {
		g.f.annotate("warning", "ProofGate VSA not written", err.Error())
		return nil
	}
	class := exit.Environment
	if errors.Is(err, fs.ErrExist) {
		class = exit.Usage
	}
	return &refusal{class, ReasonVSA, err.Error()}
}

func passedOrFailed(v bundle.Verdict) string {
	if v.Verdict == VerdictAccepted {
		return vsa.Passed
	}
	return vsa.Failed
}

// policyPath is where the policy document of the summary at path is
// written: path without ".sigstore.json" or ".json", then ".policy.json".
func policyPath(path string) string {
	if p, ok := strings.CutSuffix(path, ".sigstore.json"); ok {
		return p + ".policy.json"
	}
	return strings.TrimSuffix(path, ".json") + ".policy.json"
}

// write signs the summary and creates its file and its policy document's
// (policyPath); an existing one is refused (fs.ErrExist) and left as it
// was, and neither is left without the other.
func (s *vsaGate) write(ctx context.Context, g *gate) error {
	c := s.cand
	a, err := vsa.Inspect(bytes.NewReader(c.data), archive.DefaultLimits)
	if err != nil {
		return err
	}
	p, err := c.opts.Policy()
	if err != nil {
		return err
	}
	tr, ids, err := g.vsaTrust()
	if err != nil {
		return err
	}
	in := vsa.Input{Name: c.name, Archive: a, ResourceURI: c.uri, VerifierID: s.verifierID, Policy: p.Describe(),
		Identities: ids, Trust: tr, Verdict: c.verdict, Time: c.opts.Now}
	st, doc, err := vsa.Summarize(in)
	if err != nil {
		return err
	}
	o := app.SummaryOptions{Key: s.signer, Out: g.abs(s.path), Policy: g.abs(policyPath(s.path))}
	if s.keyless != nil {
		if o.Keyless, err = newKeylessSigner(ctx, g.o, g.f, *s.keyless, errNoVSAToken); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
		return err
	}
	_, err = app.WriteSummary(ctx, st, doc, o)
	var fe *app.SummaryFileError
	if errors.As(err, &fe) {
		name := s.path
		if fe.Path == o.Policy {
			name = policyPath(s.path)
		}
		return fmt.Errorf("vsa-path %s: %w (remove it or choose another vsa-path)", name, fe.Err)
	}
	return err
}

// artifactURI is the web address of an artifact, the summary's resourceUri.
func (g *gate) artifactURI(runID, artifactID int64) string {
	server := strings.TrimSuffix(g.o.Getenv("GITHUB_SERVER_URL"), "/")
	if server == "" {
		server = "https://github.com"
	}
	return fmt.Sprintf("%s/%s/%s/actions/runs/%d/artifacts/%d", server, g.owner, g.name, runID, artifactID)
}

// vsaTrust is the trust material the gate judged by (the trust store, which
// a keyless gate may lack, and the trusted root) and the identity inputs
// that pinned a keyless signer, for the summary's policy.
func (g *gate) vsaTrust() ([]vsa.Resource, map[string]string, error) {
	var res []vsa.Resource
	tb, err := bounded.ReadFile(g.abs(g.in.trustStore), trust.MaxSize)
	switch {
	case err == nil:
		res = append(res, vsa.TrustFile(filepath.Base(g.in.trustStore), tb))
	case !errors.Is(err, fs.ErrNotExist) || g.ids.trustedRoot == "":
		return nil, nil, fmt.Errorf("trust store: %w", err)
	}
	if g.ids.trustedRoot == "" {
		return res, nil, nil
	}
	rb, err := bounded.ReadFile(g.abs(g.ids.trustedRoot), 64<<20)
	if err != nil {
		return nil, nil, fmt.Errorf("trusted root: %w", err)
	}
	res = append(res, vsa.TrustFile(filepath.Base(g.ids.trustedRoot), rb))
	ids := map[string]string{}
	for name, v := range map[string]string{"certificate-oidc-issuer": g.ids.issuer, "signer-workflow": g.ids.signerWorkflow,
		"source-repo": g.ids.sourceRepo, "source-ref": g.ids.sourceRef} {
		if v != "" {
			ids[name] = v
		}
	}
	return res, ids, nil
}
