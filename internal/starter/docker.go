package starter

import (
	"path"
	"slices"
)

// cacheDecl is one declared cache of a sandboxed contract.
type cacheDecl struct {
	name, mount, lifetime string // lifetime "" (kept between runs) or "run"
}

// dockerShape is one ecosystem's sandboxed form (docs/adr/0030): a check
// with the network fills a dependency cache, every other check runs with
// network none, depends on it and mounts it read-only, with a build cache
// where the ecosystem has one.
type dockerShape struct {
	caches []cacheDecl
	env    [][2]string
	checks []starterCheck
}

const ro = "readonly: true}"

// sandboxed returns pr's checks in their sandboxed form; dir is the
// project's directory relative to the repository root ("" at the root).
func (pr Project) sandboxed(dir string) dockerShape {
	switch pr.kind {
	case "go":
		return pr.goShape()
	case "node":
		return pr.nodeShape(dir)
	case "python":
		return pr.pythonShape()
	case "rust":
		return pr.rustShape()
	}
	return dockerShape{checks: pr.checks}
}

// goShape: go mod download with the network into GOMODCACHE (only when
// the module has requirements), vet and test offline (GOPROXY=off) with
// the go-build cache.
func (pr Project) goShape() dockerShape {
	s := dockerShape{
		caches: []cacheDecl{{"go-build", "/cache/go-build", ""}},
		env:    [][2]string{{"GOCACHE", "/cache/go-build"}, {"GOFLAGS", "-mod=readonly"}, {"GOPROXY", "off"}, {"GOTOOLCHAIN", "local"}},
	}
	uses := []string{"go-build"}
	var after []string
	if pr.deps {
		s.caches = append(s.caches, cacheDecl{"go-mod", "/cache/go-mod", ""})
		s.env = append(s.env, [2]string{"GOMODCACHE", "/cache/go-mod"})
		uses = append(uses, "{name: go-mod, "+ro)
		after = []string{"go-fetch"}
		s.checks = append(s.checks, starterCheck{id: "go-fetch", run: []string{"go", "mod", "download"}, network: "host",
			caches: []string{"go-mod"}, env: [][2]string{{"GOPROXY", "https://proxy.golang.org"}, {"GOSUMDB", "sum.golang.org"}},
			criterion: "go-deps-verified", text: "every module is downloaded and matches go.sum"})
	}
	for _, c := range pr.checks {
		c.after, c.caches, c.env = after, uses, nil
		s.checks = append(s.checks, c)
	}
	return s
}

// nodeShape: npm ci (npm install without a lockfile) with the network and
// the npm cache, into a run-lifetime node_modules cache mounted inside the
// copied workspace; the scripts read it read-only.
func (pr Project) nodeShape(dir string) dockerShape {
	modules := path.Join("/workspace", dir, "node_modules")
	install := []string{"npm", "ci"}
	if !pr.lockfile {
		install = []string{"npm", "install", "--no-save"}
	}
	s := dockerShape{
		caches: []cacheDecl{{"npm", "/cache/npm", ""}, {"node-modules", modules, "run"}},
		env:    [][2]string{{"npm_config_cache", "/cache/npm"}, {"npm_config_update_notifier", "false"}, {"npm_config_fund", "false"}, {"npm_config_audit", "false"}},
		checks: []starterCheck{{id: "npm-install", run: install, network: "host", caches: []string{"npm", "node-modules"},
			criterion: "node-deps-installed", text: "the dependencies install"}},
	}
	for _, c := range pr.checks {
		c.after, c.caches = []string{"npm-install"}, []string{"{name: node-modules, " + ro}
		s.checks = append(s.checks, c)
	}
	return s
}

// pythonShape: pip wheel with the network builds the project's wheel and
// its dependencies' (and pytest's) into a wheel cache; pip install
// --no-index installs them offline into a run-lifetime site directory;
// pytest runs with it on PYTHONPATH.
func (pr Project) pythonShape() dockerShape {
	const wheels, site = "/cache/pip-wheels", "/cache/python-site"
	s := dockerShape{
		caches: []cacheDecl{{"pip-wheels", wheels, ""}, {"python-site", site, "run"}},
		env:    [][2]string{{"PIP_DISABLE_PIP_VERSION_CHECK", "1"}, {"PIP_NO_INPUT", "1"}, {"PYTHONDONTWRITEBYTECODE", "1"}},
		checks: []starterCheck{
			{id: "pip-fetch", run: []string{"pip", "wheel", "--wheel-dir", wheels, ".", "pytest"}, network: "host", caches: []string{"pip-wheels"},
				criterion: "python-deps-fetched", text: "the project and its dependencies build as wheels"},
			{id: "pip-install", run: []string{"pip", "install", "--no-index", "--find-links", wheels, "--target", site, ".", "pytest"},
				after: []string{"pip-fetch"}, caches: []string{"{name: pip-wheels, " + ro, "python-site"},
				criterion: "python-deps-installed", text: "the dependencies install offline"},
		},
	}
	for _, c := range pr.checks {
		c.after, c.caches = []string{"pip-install"}, []string{"{name: python-site, " + ro}
		c.env = [][2]string{{"PYTHONPATH", site}}
		s.checks = append(s.checks, c)
	}
	return s
}

// rustShape: cargo fetch with the network into CARGO_HOME; clippy and
// test offline (--offline) with the target/ build cache. They mount
// CARGO_HOME writable: cargo takes its package-cache lock there and
// unpacks crates there even offline; they run one after the other.
func (pr Project) rustShape() dockerShape {
	s := dockerShape{
		caches: []cacheDecl{{"cargo-home", "/cache/cargo", ""}, {"cargo-target", "/cache/cargo-target", ""}},
		env:    [][2]string{{"CARGO_HOME", "/cache/cargo"}, {"CARGO_TARGET_DIR", "/cache/cargo-target"}, {"CARGO_TERM_COLOR", "never"}},
		checks: []starterCheck{{id: "cargo-fetch", run: []string{"cargo", "fetch"}, network: "host", caches: []string{"cargo-home"},
			criterion: "rust-deps-fetched", text: "every crate is downloaded"}},
	}
	for _, c := range pr.checks {
		c.run = slices.Insert(slices.Clone(c.run), 2, "--offline")
		c.after, c.caches = []string{"cargo-fetch"}, []string{"cargo-home", "cargo-target"}
		s.checks = append(s.checks, c)
	}
	return s
}
