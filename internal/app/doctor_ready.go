package app

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/starter"
	"github.com/proofgate/proofgate/kernel/exit"
)

// The doctor's checks of what a run needs besides images (doctor.go): each
// process check's executable on the PATH it will get, the placeholder pin
// of the example workflows, and trust store identities that no bundle of
// this repository satisfies.

// executables resolves each process check's argv[0] as the process
// runtime will (process.Find): the PATH of the check's env, else the
// harness's PATH when env_from_host names it, else the default PATH.
func (d *doctor) executables() {
	if d.resolved == nil {
		return
	}
	ws := d.root
	if ws == "" {
		ws, _ = os.Getwd()
	}
	for _, c := range d.resolved.Checks {
		if c.Runtime != "process" {
			continue
		}
		name := "check " + c.ID
		l, err := process.Find(c.Execution().Spec("doctor", c.ID, c.Run, ws), os.LookupEnv)
		var nf *process.NotFoundError
		switch {
		case errors.As(err, &nf):
			d.fail(exit.Environment, name, err.Error(), executableFix(c.Run, nf.PathFrom))
			continue
		case err != nil:
			d.fail(exit.Usage, name, err.Error(), "fix the check's run or dir in "+d.o.Contract)
			continue
		}
		d.ok(name, describeExecutable(c.Run[0], l))
	}
}

// describeExecutable says where argv0 resolved and from which PATH.
func describeExecutable(argv0 string, l process.Lookup) string {
	s := argv0 + " is " + l.Executable.Path
	if l.Executable.Resolved != "" {
		s += " -> " + l.Executable.Resolved
	}
	if !strings.Contains(argv0, "/") {
		s += " (first match on the " + pathWord(l.PathFrom) + ")"
	}
	if l.Executable.Script {
		s += "; a script (a version manager's shim?): what it runs is its choice, not PATH's"
	}
	return s
}

func pathWord(from string) string {
	switch from {
	case process.PathFromEnv:
		return "check's env PATH"
	case process.PathFromHost:
		return "harness's PATH (env_from_host)"
	}
	return "default PATH " + process.DefaultPath
}

// executableFix says how to make argv[0] found, by where PATH came from.
func executableFix(argv []string, from string) string {
	if len(argv) == 0 || argv[0] == "" {
		return "give the check a run: [argv...]"
	}
	name := printable.ShellQuote(argv[0])
	switch {
	case from == process.PathFromHost:
		return "install " + name + " or put its directory on the PATH you run proofgate with (command -v " + name + "), or run it by absolute path"
	case from == process.PathFromEnv:
		return "add the directory of " + name + " (command -v " + name + ") to the check's env PATH, or run it by absolute path"
	}
	return "add env_from_host: [PATH] to the check (or defaults) to search your PATH, or env: {PATH: ...}, or run it by absolute path"
}

// maxWorkflow bounds a workflow file the doctor reads; maxWorkflows the
// number of files.
const (
	maxWorkflow  = 1 << 20
	maxWorkflows = 200
)

// placeholderPin is the pin the example workflows (examples/workflows)
// carry until the user puts in the ProofGate release they reviewed.
var placeholderPin = regexp.MustCompile(`OWNER/proofgate|@1{40}\b`)

// workflowPins fails on each workflow line that still holds the example
// workflows' placeholder pin: GitHub cannot resolve it, so the job fails.
func (d *doctor) workflowPins() {
	if d.root == "" {
		return
	}
	dir := filepath.Join(d.root, ".github", "workflows")
	names, err := filepath.Glob(filepath.Join(dir, "*.y*ml"))
	if err != nil || len(names) == 0 {
		return
	}
	slices.Sort(names)
	for i, p := range names {
		if i == maxWorkflows {
			d.warn("workflows", fmt.Sprintf("more than %d files in %s: the rest were not read", maxWorkflows, dir), "")
			return
		}
		rel, _ := filepath.Rel(d.root, p)
		lines, err := placeholderLines(p)
		switch {
		case err != nil:
			d.warn("workflow "+filepath.Base(p), err.Error(), "")
		case len(lines) > 0:
			d.fail(exit.Usage, "workflow "+filepath.Base(p),
				fmt.Sprintf("%s:%s still has the placeholder pin OWNER/proofgate@%s...: GitHub cannot resolve it, the job fails", rel, joinInts(lines), strings.Repeat("1", 7)),
				"replace OWNER/proofgate and the SHA with the ProofGate repository and the full commit SHA of the release you reviewed (docs/action.md); proofgate init --workflow --action OWNER/REPO@SHA writes it pinned")
		}
	}
}

// placeholderLines returns the 1-based lines of the workflow at p that
// hold the placeholder pin. Only a regular file of at most maxWorkflow
// bytes is read.
func placeholderLines(p string) ([]int, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file; not read", p)
	}
	f, err := bounded.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxWorkflow+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxWorkflow {
		return nil, fmt.Errorf("%s: over %d bytes; not read", p, maxWorkflow)
	}
	var lines []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), maxWorkflow)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 && strings.TrimSpace(line[:i]) == "" {
			continue // a comment line
		}
		if placeholderPin.MatchString(line) {
			lines = append(lines, n)
		}
	}
	return lines, sc.Err()
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}

// trustIdentities fails on keys bound to the placeholder identity
// repo:OWNER/NAME (no bundle is ever for it), and, when the origin names
// the repository, on a store none of whose usable keys accepts this
// repository's bundles (each key for another repository is named).
func (d *doctor) trustIdentities(s *trust.Store) {
	repo := d.originRepo()
	var other []string
	accepts := false
	for _, k := range s.Keys {
		if k.Status == trust.Revoked {
			continue
		}
		switch {
		case k.Identity == "repo:"+starter.PlaceholderRepo:
			d.fail(exit.Usage, "trust store", fmt.Sprintf("%s: key %s has the placeholder identity repo:%s: it verifies no bundle", d.o.Trust, shortKey(k.ID), starter.PlaceholderRepo),
				"set its identity to repo:<the repository> in "+d.o.Trust+", or remove the file and: "+d.trustAddFix(repo))
		case k.Identity == "" || k.Identity == "repo:"+repo:
			accepts = accepts || k.Status == trust.Active
		default:
			other = append(other, fmt.Sprintf("key %s is for %s", shortKey(k.ID), printable.Escape(k.Identity)))
		}
	}
	switch {
	case len(other) == 0:
	case repo == "":
		d.warn("trust identity", "no GitHub origin remote: a local run records no repository, so "+strings.Join(other, ", ")+" refuses its bundles",
			"run with --repo OWNER/NAME, or: git remote add origin https://github.com/OWNER/NAME")
	case !accepts:
		d.fail(exit.Usage, "trust identity", fmt.Sprintf("%s: %s; this repository's origin is %s, whose bundles no key accepts", d.o.Trust, strings.Join(other, ", "), repo),
			d.trustAddFix(repo)+"   (or run with --repo OWNER/NAME if the origin is not the repository)")
	default:
		d.warn("trust identity", strings.Join(other, ", ")+": those keys refuse bundles of "+repo, "")
	}
}

// trustAddFix is the trust add that fixes the store, with the origin's
// repository when known.
func (d *doctor) trustAddFix(repo string) string {
	cmd, _ := starter.TrustAddCommand(d.o.Trust, "KEY.pub.pem", repo)
	if repo == "" {
		cmd += "   (no GitHub origin: the key is then not bound to a repository)"
	}
	return cmd
}

// shortKey is a key id's first 12 hex digits, as trust list shows it.
func shortKey(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// originRepo is OWNER/NAME of the repository's GitHub origin, or "".
func (d *doctor) originRepo() string {
	if d.root == "" {
		return ""
	}
	return starter.LocalRepo(d.ctx, d.root)
}
