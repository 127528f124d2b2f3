package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/distribution/reference"

	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/examples"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/source"
	"github.com/proofgate/proofgate/internal/starter"
	"github.com/proofgate/proofgate/kernel/exit"
)

// InitOptions say what Init writes in the repository of the working
// directory.
type InitOptions struct {
	Contract string // the contract file to write (relative to the working directory)
	State    string // the state directory, whose runs/ init adds to .gitignore
	Docker   string // --docker: the image every check runs in, or ""
	Workflow bool   // sandboxed checks and the example workflows
	Action   string // --action: the workflows' pin of the action, or "" (the placeholder)
	Mirror   string // the registry mirror URL images are pinned through
	KeyDir   string // the signing key's directory ("" for the user config dir)
	NoKey    bool   // write no signing key
}

// Initialized is what Init wrote and the commands that finish the setup.
type Initialized struct {
	Written    []string         // the files, in the order written (relative to the working directory inside it)
	KeyID      string           // the signing key's id, or "" without one
	PrivateKey string           // the private key's path, or ""
	PublicKey  string           // the public key's path, or ""
	Ignored    []string         // the lines appended to .gitignore
	Starter    *starter.Starter // the projects, their runtime and images
	Workflows  bool             // whether the example workflows were written
	Action     string           // their pin of the action, or "" (the placeholder)
	Branch     starter.Branch   // the branch they run on; zero without them
	Next       []string         // the commands that finish the setup
	CI         []string         // the commands that let GitHub Actions sign, with a key
	TrustNote  string           // what the trust add command binds the key to, or ""
}

// InitFileError is a file Init could not create (fs.ErrExist when it
// appeared after the plan checked), with the files written before it.
type InitFileError struct {
	Err     error
	Written []string
}

func (e *InitFileError) Error() string { return e.Err.Error() }
func (e *InitFileError) Unwrap() error { return e.Err }

// Init decides every file init writes (the contract, the workflows, the
// key pair outside the work tree, the .gitignore lines), refuses before
// writing anything when one of them exists, pins the images, and writes.
func Init(ctx context.Context, o InitOptions) (*Initialized, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := planInit(ctx, o)
	if err != nil {
		return nil, err
	}
	in, err := p.write()
	if err != nil {
		return nil, err
	}
	p.steps(in)
	return in, nil
}

// initPlan is everything init will write, decided before anything is.
type initPlan struct {
	root, wd     string
	contractPath string
	contract     []byte
	workflows    map[string][]byte // absolute path → content
	keyPath      string
	ignore       []string // .gitignore lines to append
	starter      *starter.Starter
	repo         string // OWNER/NAME from the origin remote, or the placeholder
	branch       starter.Branch
	action       string // the workflows' pin of the ProofGate action, or "" (placeholder)
}

// planInit decides every file and refuses, before writing anything, when
// one of them exists.
func planInit(ctx context.Context, o InitOptions) (*initPlan, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, exit.Wrap(exit.Environment, err)
	}
	root, err := source.Root(ctx, wd)
	if err != nil {
		return nil, exit.Wrap(exit.Usage, fmt.Errorf("run proofgate init inside a git repository (git init first): %w", err))
	}
	if wd, err = source.AbsReal(wd); err != nil {
		return nil, exit.Wrap(exit.Environment, err)
	}
	p := &initPlan{root: root, wd: wd, repo: starter.OriginRepo(ctx, root)}
	if p.starter, err = starter.New(root, wd); err != nil {
		return nil, err
	}
	if err := checkImage(o.Docker); err != nil {
		return nil, err
	}
	if err := checkAction(o.Action, o.Workflow); err != nil {
		return nil, err
	}
	if p.contractPath, err = filepath.Abs(o.Contract); err != nil {
		return nil, exit.Wrap(exit.Environment, err)
	}
	if o.Workflow {
		if err := p.planWorkflows(ctx, o.Action); err != nil {
			return nil, err
		}
	}
	if !o.NoKey {
		if p.keyPath, err = keyPath(root, o.KeyDir); err != nil {
			return nil, err
		}
	}
	if p.ignore, err = starter.IgnoreLines(ctx, root, o.State); err != nil {
		return nil, exit.Wrap(exit.Environment, err)
	}
	if err := p.refuseExisting(); err != nil {
		return nil, err
	}
	if o.Workflow || o.Docker != "" {
		if err := p.starter.Pin(ctx, starter.PinOptions{Docker: o.Docker, Mirror: o.Mirror}); err != nil {
			return nil, err
		}
	}
	p.contract = p.starter.Contract()
	return p, nil
}

// planWorkflows decides the example workflows: on the default branch,
// with the action pinned to action unless it is "".
func (p *initPlan) planWorkflows(ctx context.Context, action string) error {
	p.branch = starter.DefaultBranch(ctx, p.root)
	var err error
	if p.workflows, err = workflowFiles(p.root, p.branch.Name); err != nil {
		return err
	}
	p.action = action
	if action != "" {
		for path, w := range p.workflows {
			p.workflows[path] = starter.PinAction(w, action)
		}
	}
	return nil
}

// targets are the files init creates, in the order it writes them.
func (p *initPlan) targets() []string {
	t := append([]string{p.contractPath}, p.workflowTargets()...)
	if p.keyPath == "" {
		return t
	}
	return append(t, p.keyPath, key.PublicPath(p.keyPath))
}

// workflowTargets are the workflow files among the targets.
func (p *initPlan) workflowTargets() []string {
	var t []string
	for _, name := range workflowNames {
		if w := filepath.Join(p.root, ".github", "workflows", name); p.workflows[w] != nil {
			t = append(t, w)
		}
	}
	return t
}

// refuseExisting names every target that already exists.
func (p *initPlan) refuseExisting() error {
	var there []string
	for _, t := range p.targets() {
		if _, err := os.Lstat(t); err == nil {
			there = append(there, p.show(t))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return exit.Wrap(exit.Environment, err)
		}
	}
	if len(there) > 0 {
		verb := "exists"
		if len(there) > 1 {
			verb = "exist"
		}
		return exit.Wrap(exit.Usage, fmt.Errorf("init never overwrites, and %s already %s; nothing was written (move it away, or pass --contract FILE, --key-dir DIR or --no-key)", strings.Join(there, ", "), verb))
	}
	return nil
}

// write creates every file, exclusively, and appends the .gitignore lines.
func (p *initPlan) write() (*Initialized, error) {
	in := &Initialized{Ignored: p.ignore, Starter: p.starter, Workflows: len(p.workflows) > 0, Action: p.action, Branch: p.branch}
	files := append([]string{p.contractPath}, p.workflowTargets()...)
	for i, t := range files {
		b := p.workflows[t]
		if i == 0 {
			b = p.contract
		}
		if err := os.MkdirAll(filepath.Dir(t), 0o755); err != nil {
			return nil, exit.Wrap(exit.Environment, err)
		}
		if err := durable.CreateExclusive(t, b, 0o644); err != nil {
			return nil, &InitFileError{err, in.Written}
		}
		in.Written = append(in.Written, p.show(t))
	}
	if p.keyPath != "" {
		if err := os.MkdirAll(filepath.Dir(p.keyPath), 0o700); err != nil {
			return nil, exit.Wrap(exit.Environment, err)
		}
		id, err := key.Generate(p.keyPath)
		if err != nil {
			return nil, &InitFileError{err, in.Written}
		}
		in.KeyID, in.PrivateKey, in.PublicKey = id, p.keyPath, key.PublicPath(p.keyPath)
		in.Written = append(in.Written, in.PrivateKey, in.PublicKey)
	}
	if len(p.ignore) > 0 {
		if err := appendLines(filepath.Join(p.root, ".gitignore"), p.ignore); err != nil {
			return nil, exit.Wrap(exit.Environment, err)
		}
		in.Written = append(in.Written, p.show(filepath.Join(p.root, ".gitignore")))
	}
	return in, nil
}

// show is a path relative to the working directory when it is inside it.
func (p *initPlan) show(path string) string {
	if rel, err := source.RelLocal(p.wd, path); err == nil {
		return rel
	}
	return path
}

// checkImage validates --docker.
func checkImage(image string) error {
	if image == "" {
		return nil
	}
	if err := printable.Check("--docker", image); err != nil || strings.ContainsAny(image, " \t<>\"'") {
		return exit.Wrap(exit.Usage, fmt.Errorf("--docker %q: want an image reference such as golang:1.26 or golang:1.26@sha256:<64 hex> (see 'proofgate init --help')", image))
	}
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		return exit.Wrap(exit.Usage, fmt.Errorf("--docker %q: %w: want an image reference such as golang:1.26 or golang:1.26@sha256:<64 hex>", image, err))
	}
	return nil
}

// actionPin is --action: OWNER/REPO@<40 hex>, a full commit SHA (a tag or
// branch can be moved to other code).
var actionPin = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9-]{0,38})/([A-Za-z0-9._-]{1,100})@([0-9a-f]{40})$`)

// checkAction validates --action; "" keeps the placeholder.
func checkAction(ref string, workflow bool) error {
	if ref == "" {
		return nil
	}
	if !workflow {
		return exit.Wrap(exit.Usage, fmt.Errorf("--action pins the action in the workflows that --workflow writes: pass both"))
	}
	m := actionPin.FindStringSubmatch(ref)
	if m == nil || m[3] == starter.ActionPlaceholderSHA || m[1] == "OWNER" || m[2] == ".." || m[2] == "." {
		return exit.Wrap(exit.Usage, fmt.Errorf("--action %q: want OWNER/REPO@<full 40-hex commit SHA> of the ProofGate release you reviewed, e.g. proofgate/proofgate@<sha> (a tag or branch can be moved: see docs/action.md)", ref))
	}
	return nil
}

// steps are the commands that finish the setup: committing what init
// wrote (after pinning the action, when the workflows keep the
// placeholder) and, with a key, giving it to GitHub Actions and trusting it.
func (p *initPlan) steps(in *Initialized) {
	add := []string{printable.ShellQuote(p.show(p.contractPath))}
	if len(p.ignore) > 0 {
		add = append(add, printable.ShellQuote(p.show(filepath.Join(p.root, ".gitignore"))))
	}
	wf := p.workflowTargets()
	for _, t := range wf {
		add = append(add, printable.ShellQuote(p.show(t)))
	}
	if len(p.workflows) > 0 && p.action == "" {
		in.Next = append(in.Next, "pin the action: replace "+starter.ActionPlaceholderOwner+"@"+starter.ActionPlaceholderSHA+" in "+
			strings.Join(add[len(add)-len(wf):], " ")+" with OWNER/REPO@<full SHA> of the ProofGate release you reviewed (init --action does it; doctor fails until then)")
	}
	in.Next = append(in.Next, "proofgate contract check",
		"git add "+strings.Join(add, " ")+" && git commit -m 'ProofGate contract'", "proofgate run")
	if p.keyPath == "" {
		return
	}
	trustStore := p.show(filepath.Join(p.root, ".proofgate", "trust.json"))
	trustAdd, note := starter.TrustAddCommand(trustStore, key.PublicPath(p.keyPath), p.repo)
	in.CI, in.TrustNote = []string{
		"gh secret set PROOFGATE_SIGNING_KEY < " + printable.ShellQuote(p.keyPath),
		trustAdd,
		"git add " + printable.ShellQuote(trustStore) + " && git commit -m 'ProofGate trust store'",
	}, note
}

// workflowNames are the example workflows --workflow writes.
var workflowNames = []string{"proofgate.yml", "release-gate.yml"}

// workflowFiles are the example workflows, on branch, by their path
// under root.
func workflowFiles(root, branch string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, name := range workflowNames {
		b, err := examples.Workflows.ReadFile("workflows/" + name)
		if err != nil {
			return nil, exit.Wrap(exit.Environment, err)
		}
		if b, err = starter.OnBranch(b, branch); err != nil {
			return nil, exit.Wrap(exit.Environment, fmt.Errorf("examples/workflows/%s: %w", name, err))
		}
		out[filepath.Join(root, ".github", "workflows", name)] = b
	}
	return out, nil
}

// keyPath is <dir>/<repo name>-<8 hex of the root path>.pem, refusing a
// directory inside the work tree: a private key there is one `git add -A`
// away from being published.
func keyPath(root, dir string) (string, error) {
	if dir == "" {
		cfg, err := os.UserConfigDir()
		if err != nil {
			return "", exit.Wrap(exit.Environment, fmt.Errorf("no user config directory (%w); pass --key-dir DIR outside the repository", err))
		}
		dir = filepath.Join(cfg, "proofgate", "keys")
	}
	abs, err := source.AbsReal(dir)
	if err != nil {
		return "", exit.Wrap(exit.Environment, err)
	}
	if _, err := source.RelLocal(root, abs); err == nil || abs == root {
		return "", exit.Wrap(exit.Usage, fmt.Errorf("the key directory %s is inside the work tree %s: a private key must never be in the repository; pass --key-dir DIR outside it", dir, root))
	}
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(abs, starter.ContractName(root)+"-"+hex.EncodeToString(sum[:4])+".pem"), nil
}

// appendLines appends lines to a file, creating it, on a fresh line.
func appendLines(path string, lines []string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	text := "# proofgate: run state (proofgate init)\n" + strings.Join(lines, "\n") + "\n"
	if len(old) > 0 && old[len(old)-1] != '\n' {
		text = "\n" + text
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
