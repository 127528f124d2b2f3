package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/docker"
	"github.com/proofgate/proofgate/internal/source"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/exit"
)

// finding is one line of the doctor's report.
type finding struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok | warn | fail
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
	class  exit.Class
}

// doctor gathers the findings; each step may add some.
type doctor struct {
	g        *globals
	ctx      context.Context
	profile  string
	trust    string
	root     string
	resolved *contract.Resolved
	found    []finding
}

func (d *doctor) ok(name, detail string) {
	d.found = append(d.found, finding{Name: name, Status: "ok", Detail: detail})
}

func (d *doctor) warn(name, detail, fix string) {
	d.found = append(d.found, finding{Name: name, Status: "warn", Detail: detail, Fix: fix})
}

func (d *doctor) fail(c exit.Class, name, detail, fix string) {
	d.found = append(d.found, finding{Name: name, Status: "fail", Detail: detail, Fix: fix, class: c})
}

func doctorCmd(g *globals) *cobra.Command {
	d := &doctor{g: g}
	var asJSON bool
	c := &cobra.Command{
		Use:   "doctor [--profile P] [--trust FILE] [--json]",
		Short: "Check what a run needs and say what to fix",
		Long: `Check, in order: git and that the current directory is in a repository
with a commit; the contract (as 'contract check' does, with --profile); the
Docker daemon and its API version, and that each docker check's image is
pinned by digest (a repository digest, or the image ID of a local build:
NAME[:TAG]@sha256:<ID>) and present locally, or, under pull: missing or
always, known to its registry (asked through the daemon, which honours its
registry mirrors; the layers are not pulled); that each process check's
executable is found on the PATH the check gets (its env PATH, else your
PATH when env_from_host names it, else the default PATH), printing the file
it resolves to; the trust store (--trust, default .proofgate/trust.json;
absent is a warning: only the release gate needs it), and that its keys'
identities accept this repository's bundles (not the placeholder
repo:OWNER/NAME, and for the origin remote's repository); that no workflow
in .github/workflows still has the placeholder pin OWNER/proofgate@1111...
(proofgate init --action pins it); that the state directory's runs/ is
ignored by git. Each problem comes with the command or edit that fixes it.

Exit 0 when nothing failed (warnings allowed); 2 when an input is invalid
or missing (no repository, no commit, an invalid contract or trust store,
an unpinned image, a placeholder pin or identity); otherwise 4
(environment: no git, no Docker daemon, a missing image or executable).
An unpinned image (a tag alone) is an invalid input (2): the fix line gives
the pinned reference.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 60*time.Second)
			defer cancel()
			d.ctx = ctx
			d.run()
			return d.report(asJSON)
		},
	}
	c.Flags().StringVar(&d.profile, "profile", "", "resolve this contract profile")
	c.Flags().StringVar(&d.trust, "trust", ".proofgate/trust.json", "trust store to check")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (d *doctor) run() {
	if d.git() {
		d.repository()
	}
	d.contract()
	d.executables()
	d.docker()
	d.trustStore()
	d.workflowPins()
	d.ignored()
}

func (d *doctor) git() bool {
	out, err := exec.CommandContext(d.ctx, "git", "--version").Output()
	if err != nil {
		d.fail(exit.Environment, "git", fmt.Sprintf("git does not run: %v", err), "install git and put it on PATH")
		return false
	}
	d.ok("git", strings.TrimSpace(string(out)))
	return true
}

func (d *doctor) repository() {
	wd, err := os.Getwd()
	if err != nil {
		d.fail(exit.Environment, "repository", err.Error(), "")
		return
	}
	root, err := source.Root(d.ctx, wd)
	if err != nil {
		d.fail(exit.Usage, "repository", "not inside a git repository", "cd into your repository, or: git init && git add -A && git commit -m 'first commit'")
		return
	}
	d.root = root
	if exec.CommandContext(d.ctx, "git", "-C", root, "rev-parse", "--verify", "-q", "HEAD^{commit}").Run() != nil {
		d.fail(exit.Usage, "repository", root+" has no commit yet: a run binds a commit", "git add -A && git commit -m 'first commit'")
		return
	}
	d.ok("repository", root)
}

func (d *doctor) contract() {
	r, err := contract.Load(d.g.contract, d.profile)
	if err != nil {
		fix := "fix the field the message names, then: proofgate contract check"
		if errors.Is(err, fs.ErrNotExist) {
			fix = "proofgate init (writes a starter contract), or pass --contract FILE"
		}
		d.fail(exit.Usage, "contract", err.Error(), fix)
		return
	}
	h, err := r.Hash()
	if err != nil {
		d.fail(exit.Usage, "contract", err.Error(), "")
		return
	}
	d.resolved = r
	d.ok("contract", fmt.Sprintf("%s: valid (%d checks), contract_hash %s", d.g.contract, len(r.Checks), h))
}

// dockerImages returns the distinct images of the docker checks and the
// pull policy of the first check naming each.
func (d *doctor) dockerImages() (images []string, pull map[string]string) {
	pull = map[string]string{}
	if d.resolved == nil {
		return nil, pull
	}
	for _, c := range d.resolved.Checks {
		if c.Runtime != "docker" {
			continue
		}
		if _, seen := pull[c.Image]; !seen {
			images = append(images, c.Image)
			pull[c.Image] = c.Pull
		}
	}
	return images, pull
}

func (d *doctor) docker() {
	images, pull := d.dockerImages()
	rt, err := docker.New(d.ctx)
	if err != nil {
		if len(images) == 0 {
			d.warn("docker", fmt.Sprintf("no daemon (%v); not needed: no check runs in Docker", err), "")
			return
		}
		d.fail(exit.Environment, "docker", err.Error(), "start the Docker daemon (Docker Desktop, colima, dockerd), or set DOCKER_HOST")
		return
	}
	defer rt.Close()
	d.ok("docker", fmt.Sprintf("daemon %s, API %s", rt.DaemonVersion(), rt.APIVersion()))
	for _, img := range images {
		d.image(rt, img, pull[img])
	}
}

// image checks that img is present or pullable, and pinned by digest: a
// repository digest, or the image ID of a local build (ADR 0031).
func (d *doctor) image(rt *docker.Runtime, ref, pull string) {
	name := "image " + ref
	img, err := rt.LookUp(d.ctx, ref)
	var mismatch *docker.NameMismatchError
	switch {
	case err == nil && img.Pin == docker.PinTag:
		pinned, how := docker.PinnedRef(ref, img)
		d.fail(exit.Usage, name, "present ("+img.ID+") but not pinned: a tag can move to other bytes between runs",
			"pin it in the contract as "+pinned+"   ("+pinHow(how)+")")
	case err == nil:
		d.ok(name, "present ("+img.ID+"), pinned by "+pinHow(img.Pin))
	case errors.As(err, &mismatch):
		tag, _, _ := strings.Cut(ref, "@")
		d.fail(exit.Usage, name, err.Error(), "fix the image name in the contract, or re-pin with the ID docker image inspect --format '{{.Id}}' "+shellQuote(tag)+" prints")
	case !errors.Is(err, docker.ErrImageNotPresent):
		d.fail(exit.Environment, name, err.Error(), "")
	case pull == "never":
		d.fail(exit.Environment, name, "not present, and the contract says pull: never",
			"docker pull "+shellQuote(ref)+"   (or set pull: missing in the contract)"+localHint(ref))
	default:
		d.pullable(rt, ref, pull)
	}
}

// pullable checks, for an absent image that run would pull, that the
// registry has it (the manifest, not the layers) and that it is pinned.
func (d *doctor) pullable(rt *docker.Runtime, ref, pull string) {
	name := "image " + ref
	manifest, err := rt.Pullable(d.ctx, ref)
	switch {
	case err != nil:
		hint := ""
		if errors.Is(err, docker.ErrNotInRegistry) {
			hint = localHint(ref)
		}
		d.fail(exit.Environment, name, "not present, and cannot be pulled (pull: "+pull+"): "+err.Error()+hint,
			"check the name and the registry (docker pull "+shellQuote(ref)+" says the same), or build the image here")
	case !strings.Contains(ref, "@"):
		d.fail(exit.Usage, name, "not present and not pinned: a tag can move to other bytes between runs (the registry has "+manifest+")",
			"pin it in the contract as "+ref+"@"+manifest+"   (the repository digest)")
	default:
		d.ok(name, "not present; the registry has it ("+manifest+"): run pulls it (pull: "+pull+")")
	}
}

// pinHow names a pin in doctor's words.
func pinHow(p docker.Pin) string {
	if p == docker.PinImageID {
		return "the image ID of a local build: it pins the bytes on this daemon only"
	}
	return "the repository digest"
}

// localHint is what an absent digest reference may be: a local build's
// image ID, which no registry can serve.
func localHint(ref string) string {
	if !strings.Contains(ref, "@") {
		return ""
	}
	name, _, _ := strings.Cut(ref, "@")
	return " (if the digest is the ID of an image built locally, no registry has it: docker build -t " + name + " . and re-pin with the new ID)"
}

func (d *doctor) trustStore() {
	s, err := trust.Load(d.trust)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.warn("trust store", d.trust+" not found: the release gate needs it to verify bundles",
			d.trustAddFix(d.originRepo())+" (proofgate init prints it), then commit it")
	case err != nil:
		d.fail(exit.Usage, "trust store", err.Error(), "fix the file, or recreate it with proofgate trust add")
	default:
		d.ok("trust store", fmt.Sprintf("%s: %d key(s), %d keyless identit(ies)", d.trust, len(s.Keys), len(s.Identities)))
		d.trustIdentities(s)
	}
}

func (d *doctor) ignored() {
	if d.root == "" {
		return
	}
	lines, err := ignoreLines(d.ctx, d.root, d.g.state)
	if err != nil || len(lines) == 0 {
		return
	}
	d.warn("gitignore", "git does not ignore "+strings.TrimSuffix(lines[0], "/")[1:]+"/: a run there makes the tree look dirty to git status",
		"echo "+shellQuote(lines[0])+" >> .gitignore   (proofgate init adds it)")
}

// report prints the findings and returns the exit class.
func (d *doctor) report(asJSON bool) error {
	class := exit.Class(exit.OK)
	var failed []string
	for _, f := range d.found {
		if f.Status != "fail" {
			continue
		}
		failed = append(failed, f.Name)
		if class == exit.OK || f.class == exit.Usage {
			class = f.class
		}
	}
	if asJSON {
		if err := writeJSONText(d.g.stdout, map[string]any{"ok": len(failed) == 0, "exit_code": class.Code(), "checks": d.found}); err != nil {
			return envErr(err)
		}
		if class == exit.OK {
			return nil
		}
		return silent(class)
	}
	for _, f := range d.found {
		fmt.Fprintf(d.g.stdout, "%-5s %-12s %s\n", f.Status, esc(f.Name), esc(f.Detail))
		if f.Fix != "" {
			fmt.Fprintf(d.g.stdout, "      fix: %s\n", esc(f.Fix))
		}
	}
	if class == exit.OK {
		fmt.Fprintln(d.g.stdout, "ready: nothing failed")
		return nil
	}
	return exit.Wrap(class, fmt.Errorf("doctor: %d problem(s) to fix: %s", len(failed), strings.Join(slices.Compact(failed), ", ")))
}
