package starter

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/proofgate/proofgate/internal/bounded"
	"golang.org/x/mod/modfile"
)

// The official images init uses when the project names no version, and
// the bounds of a version it accepts from a manifest. docs/adr/0030.
const (
	defaultGoImage     = "golang:1.26"
	defaultNodeImage   = "node:22"
	defaultPythonImage = "python:3.13"
	defaultRustImage   = "rust:1"
	minNodeMajor       = 4
	maxNodeMajor       = 99
	maxRangeLen        = 256
)

// toolImage is the official image a project's checks run in, and where
// its tag came from (printed, and in --json).
type toolImage struct {
	image string // e.g. golang:1.26.8
	from  string // e.g. "go.mod toolchain go1.26.8", or "default"
	note  string // why a manifest's version was ignored, if it was
}

// readManifest reads a small project file; absent is ("", nil). A FIFO,
// a device or a directory under a manifest's name is refused at once
// (bounded.Open), as is a manifest over maxManifest bytes.
func readManifest(path string) ([]byte, error) {
	b, err := bounded.ReadFile(path, maxManifest)
	var notRegular *bounded.NotRegularError
	var tooLarge *bounded.TooLargeError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.As(err, &notRegular):
		return nil, usage(err)
	case errors.As(err, &tooLarge):
		return nil, usage(fmt.Errorf("%s is larger than %d bytes: init reads only small manifests", path, maxManifest))
	case err != nil:
		return nil, environment(err)
	}
	return b, nil
}

var goVersionTag = regexp.MustCompile(`^1\.(\d{1,3})(\.\d{1,3}|rc\d{1,2})?$`)

// goModule reads go.mod: the image (toolchain goX.Y.Z → golang:X.Y.Z,
// else go X.Y[.Z] → golang:X.Y) and whether the module has requirements
// (then a fetch check downloads them).
func goModule(dir string) (toolImage, bool, error) {
	path := filepath.Join(dir, "go.mod")
	b, err := readManifest(path)
	if err != nil {
		return toolImage{}, false, err
	}
	mf, err := modfile.Parse(path, b, nil)
	if err != nil {
		return toolImage{}, false, usage(fmt.Errorf("%w (fix go.mod, e.g. `go 1.26`, then run init again)", err))
	}
	requires := len(mf.Require) > 0
	if mf.Toolchain != nil {
		v := strings.TrimPrefix(mf.Toolchain.Name, "go")
		if goVersionTag.MatchString(v) {
			return toolImage{image: "golang:" + v, from: "go.mod toolchain " + mf.Toolchain.Name}, requires, nil
		}
	}
	if mf.Go != nil {
		v := mf.Go.Version
		if !goVersionTag.MatchString(v) {
			return toolImage{}, false, usage(fmt.Errorf("%s: go %q: want go 1.N or 1.N.P (then init pins golang:1.N)", path, v))
		}
		if m := regexp.MustCompile(`^1\.\d+`).FindString(v); m != "" && !strings.Contains(v, "rc") {
			v = m
		}
		return toolImage{image: "golang:" + v, from: "go.mod go " + mf.Go.Version}, requires, nil
	}
	return toolImage{image: defaultGoImage, from: "default (go.mod has no go line)"}, requires, nil
}

// nodeImage: engines.node (the lowest major its range allows), else
// .nvmrc or .node-version, else the default.
func nodeImage(dir, engines string) (toolImage, error) {
	var notes []string
	if engines != "" {
		if m, ok := lowestNodeMajor(engines); ok {
			return toolImage{image: "node:" + strconv.Itoa(m), from: fmt.Sprintf("package.json engines.node %q", engines)}, nil
		}
		notes = append(notes, fmt.Sprintf("package.json engines.node %.80q names no lowest Node major between %d and %d", engines, minNodeMajor, maxNodeMajor))
	}
	for _, f := range []string{".nvmrc", ".node-version"} {
		b, err := readManifest(filepath.Join(dir, f))
		if err != nil || b == nil {
			if err != nil {
				return toolImage{}, err
			}
			continue
		}
		v := strings.TrimSpace(string(b))
		if m, ok := nodeMajor(strings.TrimPrefix(v, "v")); ok {
			return toolImage{image: "node:" + strconv.Itoa(m), from: f + " " + strconv.Quote(v), note: strings.Join(notes, "; ")}, nil
		}
		notes = append(notes, fmt.Sprintf("%s %.80q is not a Node version", f, v))
	}
	return toolImage{image: defaultNodeImage, from: "default", note: strings.Join(notes, "; ")}, nil
}

// opSpace is the space a range may put between an operator and its
// version (">= 18").
var opSpace = regexp.MustCompile(`([<>=^~]+)\s+`)

var nodeVersion = regexp.MustCompile(`^(\d{1,3})(\.(\d+|x|X|\*)){0,2}$`)

func nodeMajor(v string) (int, bool) {
	m := nodeVersion.FindStringSubmatch(v)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil && n >= minNodeMajor && n <= maxNodeMajor
}

// lowestNodeMajor is the lowest Node major a semver range allows: the
// minimum over its || alternatives of each one's highest lower bound.
// An alternative without a lower bound (*, <20) makes it unknown.
func lowestNodeMajor(rng string) (int, bool) {
	if len(rng) > maxRangeLen {
		return 0, false
	}
	rng = opSpace.ReplaceAllString(rng, "$1")
	best := -1
	for _, alt := range strings.Split(rng, "||") {
		low, ok := altLowerMajor(strings.Fields(alt))
		if !ok {
			return 0, false
		}
		if best < 0 || low < best {
			best = low
		}
	}
	return best, best >= minNodeMajor && best <= maxNodeMajor
}

func altLowerMajor(tokens []string) (int, bool) {
	low := -1
	for i, t := range tokens {
		if t == "-" && i > 0 { // "18 - 20": the lower bound came first
			break
		}
		if strings.HasPrefix(t, "<") {
			continue
		}
		v := strings.TrimLeft(t, ">=^~v")
		m, ok := nodeMajor(strings.TrimPrefix(v, "v"))
		if !ok {
			return 0, false
		}
		if m > low {
			low = m
		}
	}
	return low, low >= 0
}

// pythonImage: [project] requires-python (its lowest x.y), else the default.
func pythonImage(dir string) (toolImage, error) {
	path := filepath.Join(dir, "pyproject.toml")
	b, err := readManifest(path)
	if err != nil || b == nil {
		return toolImage{image: defaultPythonImage, from: "default"}, err
	}
	var doc struct {
		Project struct {
			RequiresPython string `toml:"requires-python"`
		} `toml:"project"`
	}
	if _, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&doc); err != nil {
		return toolImage{}, usage(fmt.Errorf("%s: %w", path, err))
	}
	spec := doc.Project.RequiresPython
	if spec == "" {
		return toolImage{image: defaultPythonImage, from: "default"}, nil
	}
	if v, ok := lowestPython(spec); ok {
		return toolImage{image: "python:" + v, from: fmt.Sprintf("pyproject.toml requires-python %q", spec)}, nil
	}
	return toolImage{image: defaultPythonImage, from: "default", note: fmt.Sprintf("pyproject.toml requires-python %.80q names no lowest Python 3.N", spec)}, nil
}

var pyClause = regexp.MustCompile(`^(>=|~=|==|>|\^)?\s*3\.(\d{1,2})(\.[\d*]+)?$`)

// lowestPython is the highest lower bound of a PEP 440 specifier's
// clauses, as 3.N.
func lowestPython(spec string) (string, bool) {
	if len(spec) > maxRangeLen {
		return "", false
	}
	low := -1
	for _, c := range strings.Split(spec, ",") {
		c = strings.TrimSpace(c)
		if strings.HasPrefix(c, "<") || strings.HasPrefix(c, "!=") {
			continue
		}
		m := pyClause.FindStringSubmatch(c)
		if m == nil {
			return "", false
		}
		n, _ := strconv.Atoi(m[2])
		if n > low {
			low = n
		}
	}
	return "3." + strconv.Itoa(low), low >= 0
}

var rustVersion = regexp.MustCompile(`^1\.\d{1,3}(\.\d{1,3})?$`)

// rustImage: rust-toolchain.toml or rust-toolchain (its channel, when a
// version), else Cargo.toml rust-version, else the default.
func rustImage(dir string) (toolImage, error) {
	var notes []string
	for _, f := range []string{"rust-toolchain.toml", "rust-toolchain"} {
		ch, err := rustChannel(filepath.Join(dir, f))
		if err != nil {
			return toolImage{}, err
		}
		if ch == "" {
			continue
		}
		if rustVersion.MatchString(ch) {
			return toolImage{image: "rust:" + ch, from: f + " channel " + ch}, nil
		}
		notes = append(notes, fmt.Sprintf("%s channel %.80q is not a version", f, ch))
	}
	b, err := readManifest(filepath.Join(dir, "Cargo.toml"))
	if err != nil {
		return toolImage{}, err
	}
	var cargo struct {
		Package struct {
			RustVersion any `toml:"rust-version"`
		} `toml:"package"`
	}
	if _, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&cargo); err != nil {
		return toolImage{}, usage(fmt.Errorf("%s: %w", filepath.Join(dir, "Cargo.toml"), err))
	}
	if v, ok := cargo.Package.RustVersion.(string); ok && rustVersion.MatchString(v) {
		return toolImage{image: "rust:" + v, from: "Cargo.toml rust-version " + v, note: strings.Join(notes, "; ")}, nil
	}
	return toolImage{image: defaultRustImage, from: "default", note: strings.Join(notes, "; ")}, nil
}

// rustChannel reads a toolchain file: TOML with [toolchain] channel, or
// the legacy one-line form.
func rustChannel(path string) (string, error) {
	b, err := readManifest(path)
	if err != nil || b == nil {
		return "", err
	}
	var doc struct {
		Toolchain struct {
			Channel string `toml:"channel"`
		} `toml:"toolchain"`
	}
	if _, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&doc); err == nil && doc.Toolchain.Channel != "" {
		return doc.Toolchain.Channel, nil
	}
	if line := strings.TrimSpace(string(b)); !strings.ContainsAny(line, "\n[=") {
		return line, nil
	}
	return "", nil
}
