package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"

	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/docker"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/source"
	"github.com/proofgate/proofgate/internal/starter"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/exit"
)

// Finding is one line of the doctor's report: what was checked, ok,
// warn or fail, what was found and, for a problem, the command or edit
// that fixes it.
type Finding struct {
	Name   string     `json:"name"`
	Status string     `json:"status"` // ok | warn | fail
	Detail string     `json:"detail"`
	Fix    string     `json:"fix,omitempty"`
	Class  exit.Class `json:"-"` // of a fail
}

// DoctorOptions say what the doctor checks: the contract file (resolved
// with Profile), the trust store and the state directory.
type DoctorOptions struct {
	Contract, Profile, Trust, State string
}

// Doctor checks what a run needs, in order: git and the repository, the
// contract, each process check's executable, the Docker daemon and each
// docker check's image, the trust store and its identities, the example
// workflows' pins and that the state directory's runs/ is ignored.
func Doctor(ctx context.Context, o DoctorOptions) []Finding {
	d := &doctor{ctx: ctx, o: o}
	d.run()
	return d.found
}

// DoctorClass is the exit class of findings (a usage fail wins over an
// environment fail; OK when none failed) and the names that failed.
func DoctorClass(found []Finding) (exit.Class, []string) {
	class := exit.Class(exit.OK)
	var failed []string
	for _, f := range found {
		if f.Status != "fail" {
			continue
		}
		failed = append(failed, f.Name)
		if class == exit.OK || f.Class == exit.Usage {
			class = f.Class
		}
	}
	return class, failed
}

// doctor gathers the findings; each step may add some.
type doctor struct {
	ctx      context.Context
	o        DoctorOptions
	root     string
	resolved *contract.Resolved
	found    []Finding
}

func (d *doctor) ok(name, detail string) {
	d.found = append(d.found, Finding{Name: name, Status: "ok", Detail: detail})
}

func (d *doctor) warn(name, detail, fix string) {
	d.found = append(d.found, Finding{Name: name, Status: "warn", Detail: detail, Fix: fix})
}

func (d *doctor) fail(c exit.Class, name, detail, fix string) {
	d.found = append(d.found, Finding{Name: name, Status: "fail", Detail: detail, Fix: fix, Class: c})
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
	r, err := contract.Load(d.o.Contract, d.o.Profile)
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
	d.ok("contract", fmt.Sprintf("%s: valid (%d checks), contract_hash %s", d.o.Contract, len(r.Checks), h))
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
		d.fail(exit.Usage, name, err.Error(), "fix the image name in the contract, or re-pin with the ID docker image inspect --format '{{.Id}}' "+printable.ShellQuote(tag)+" prints")
	case !errors.Is(err, docker.ErrImageNotPresent):
		d.fail(exit.Environment, name, err.Error(), "")
	case pull == "never":
		d.fail(exit.Environment, name, "not present, and the contract says pull: never",
			"docker pull "+printable.ShellQuote(ref)+"   (or set pull: missing in the contract)"+localHint(ref))
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
			"check the name and the registry (docker pull "+printable.ShellQuote(ref)+" says the same), or build the image here")
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
	s, err := trust.Load(d.o.Trust)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.warn("trust store", d.o.Trust+" not found: the release gate needs it to verify bundles",
			d.trustAddFix(d.originRepo())+" (proofgate init prints it), then commit it")
	case err != nil:
		d.fail(exit.Usage, "trust store", err.Error(), "fix the file, or recreate it with proofgate trust add")
	default:
		d.ok("trust store", fmt.Sprintf("%s: %d key(s), %d keyless identit(ies)", d.o.Trust, len(s.Keys), len(s.Identities)))
		d.trustIdentities(s)
	}
}

func (d *doctor) ignored() {
	if d.root == "" {
		return
	}
	lines, err := starter.IgnoreLines(d.ctx, d.root, d.o.State)
	if err != nil || len(lines) == 0 {
		return
	}
	d.warn("gitignore", "git does not ignore "+strings.TrimSuffix(lines[0], "/")[1:]+"/: a run there makes the tree look dirty to git status",
		"echo "+printable.ShellQuote(lines[0])+" >> .gitignore   (proofgate init adds it)")
}
